// SshTargetPanel: the "SSH nodes" part of the launch target page — the hosts,
// node 0 first (picked from the user's ssh config aliases or typed), the
// rendezvous address and port, and "Check hosts": the pre-flight checks
// (app/cluster/preflight.h) on the RemoteWorker's thread, cancellable, with
// progress, shown in a PreflightTableView.
//
// The panel holds the host list; LaunchTargetPage writes it into launch.hosts
// while the target is SSH (hostsEdited), and gives it the document's list back.
// Ownership: borrows the document and the worker. Thread-safety: GUI thread only.
#pragma once

#include <QStringList>
#include <QWidget>
#include <functional>

#include "ui/remote/remote_worker.h"

class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class PreflightTableView;

class SshTargetPanel : public QWidget {
  Q_OBJECT
 public:
  // `input` fills the engine and run root of a check (the page's shared fields).
  SshTargetPanel(app::ConfigDocument* document, RemoteWorker* worker, QWidget* parent = nullptr);

  QStringList hosts() const;
  // Shows `hosts` (no hostsEdited).
  void setHosts(const QStringList& hosts);
  // The entries offered in the host picker ("local" and the ssh config aliases).
  void setAliases(const QStringList& aliases);
  QComboBox* hostPicker() const { return picker_; }
  PreflightTableView* preflightView() const { return table_; }
  QPushButton* checkButton() const { return check_; }
  bool isChecking() const { return checking_; }
  QLabel* stateLabel() const { return state_; }

  // Where the engine and run root of a check come from (set by the page).
  void setInputSource(std::function<PreflightInput()> source) { inputSource_ = std::move(source); }

 public slots:
  // Adds the picker's text as the last node.
  void addHost();
  void checkHosts();
  void cancelCheck();

 signals:
  void hostsEdited(const QStringList& hosts);
  void checkFinished(bool ok);

 private:
  void editHosts(const std::function<void()>& change);
  void onProgress(const QString& message);
  void onDone(const app::cluster::PreflightTable& table, bool cancelled);
  void setChecking(bool checking);

  app::ConfigDocument* document_;
  RemoteWorker* worker_;
  std::function<PreflightInput()> inputSource_;
  QComboBox* picker_;
  QListWidget* list_;
  QPushButton* check_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* state_;
  PreflightTableView* table_;
  bool checking_ = false;
};

}  // namespace fs::ui

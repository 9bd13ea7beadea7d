// RemoteRunsDialog: the runs under a run root on a host ("local" or an ssh_config
// alias / [user@]host[:port]), listed on a worker thread (scanRemoteRunRoot through
// a RemoteWorker), as a table; a run double-clicked or Attach asks the window to
// follow it (attachRequested; MainWindow passes it to RemoteRunFollow::follow);
// Add to History asks the window to record it in the run history
// (addToHistoryRequested; read on the history thread through the host).
//
// Non-modal: the window keeps working while a listing runs; Cancel ends it at the
// next run directory. Ownership: shares the HostOpenerService; owns its worker.
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <memory>

#include "app/cluster/remote_runs.h"
#include "app/common/worker_thread.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/remote_worker.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;

namespace fs::ui {

class RemoteRunsDialog : public QDialog {
  Q_OBJECT
 public:
  // `sshConfig`: where the host aliases come from (default: the user's ssh config).
  explicit RemoteRunsDialog(std::shared_ptr<HostOpenerService> hosts, QWidget* parent = nullptr,
                            const app::remote::SshConfigOptions& sshConfig = {});
  ~RemoteRunsDialog() override;

  QComboBox* hostField() const { return host_; }
  QLineEdit* rootField() const { return root_; }
  QTreeWidget* table() const { return table_; }
  QPushButton* listButton() const { return list_; }
  QPushButton* attachButton() const { return attach_; }
  QPushButton* addToHistoryButton() const { return addToHistory_; }
  bool listing() const { return listing_; }

 public slots:
  // Lists the run root of the fields (cancels nothing: a listing in progress is waited for).
  void listRuns();
  void cancelListing();
  // Asks to follow the selected run (attachRequested).
  void attachSelected();
  // Asks to record the selected run in the history (addToHistoryRequested).
  void addSelectedToHistory();

 signals:
  void attachRequested(const QString& host, const QString& runDir);
  void addToHistoryRequested(const QString& host, const QString& runDir);
  // After a listing was shown (its rows are in table()).
  void listed(const fs::app::cluster::RemoteRunScan& scan);

 private:
  void showScan(const app::cluster::RemoteRunScan& scan);
  void updateButtons();

  std::unique_ptr<app::WorkerThread<RemoteWorker>> worker_;
  QComboBox* host_;
  QLineEdit* root_;
  QPushButton* list_;
  QPushButton* cancel_;
  QPushButton* attach_;
  QPushButton* addToHistory_;
  QTreeWidget* table_;
  QLabel* status_;
  bool listing_ = false;
  QString listedHost_;  // the host of the rows shown
};

}  // namespace fs::ui

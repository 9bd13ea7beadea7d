// RunControlBar: the buttons that control a run, and one line saying how the
// last command went.
//
// See NOTE [Run control buttons] in run_control_bar.cpp.
//
// Ownership: borrows the client and the launcher, which must outlive the bar
// (or be detached first). Thread-safety: GUI thread only.
#pragma once

#include <QPointer>
#include <QWidget>

#include "app/control/control_client.h"
#include "app/launch/launcher.h"

class QLabel;
class QPushButton;

namespace fs::ui {

class RunControlBar : public QWidget {
  Q_OBJECT
 public:
  // REQUIRES: client != nullptr.
  explicit RunControlBar(app::ControlClient* client, QWidget* parent = nullptr);

  // The launcher of the run being controlled, or nullptr for a run this app
  // did not start.
  void setLauncher(app::Launcher* launcher);

  QPushButton* stopButton() const { return stop_; }
  QPushButton* killButton() const { return kill_; }
  QPushButton* pauseResumeButton() const { return pauseResume_; }
  QPushButton* checkpointButton() const { return checkpoint_; }
  // The inline message ("" when there is nothing to say).
  QString message() const;

 private:
  void updateButtons();
  void onPauseResume();
  void onWritten(const app::ControlRequest& request);
  void onAcknowledged(const app::ControlRequest& request, bool ok, const QString& message, qint64 step);
  void onTimedOut(const app::ControlRequest& request, const QString& message);
  void onLauncherFinished(int exitCode, app::ExitKind how);
  void showMessage(const QString& text, bool problem);

  app::ControlClient* client_;
  QPointer<app::Launcher> launcher_;
  QPushButton* stop_;
  QPushButton* pauseResume_;
  QPushButton* checkpoint_;
  QPushButton* kill_;
  QLabel* message_;
  bool exitShown_ = false;  // the launcher's exit message stays: the last word on the run
};

}  // namespace fs::ui

#include "ui/control/run_control_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

// NOTE [Run control buttons]
//   [Stop] [Pause|Resume] [Checkpoint now] [Kill]   pause sent; waiting for the run...
//
// Stop asks for a checkpoint first; Kill aborts without one and is drawn in red
// instead of asking for confirmation. The buttons follow the ControlClient:
// nothing is enabled without a run or after it ended; a command's button is
// disabled while it is pending; after a stop or kill only Kill stays; the toggle
// says Resume once the run is paused (the pause ack, or a `paused` state event).
// Pending, refused, timed-out and failed commands are shown inline, never in a
// dialog.
//
// With a launcher attached (setLauncher) the bar also knows when the process
// exits, and a kill the run does not acknowledge in time is carried out on the
// process itself (SIGKILL).

namespace fs::ui {
namespace {

using protocol::ControlVerb;
using protocol::RunState;

QString capitalized(QString text) {
  if (!text.isEmpty()) text[0] = text[0].toUpper();
  return text;
}

QPushButton* makeButton(const QString& text, const QString& name, const QString& tip) {
  auto* b = new QPushButton(text);
  b->setObjectName(name);
  b->setToolTip(tip);
  b->setAutoDefault(false);
  return b;
}

}  // namespace

RunControlBar::RunControlBar(app::ControlClient* client, QWidget* parent)
    : QWidget(parent),
      client_(client),
      stop_(makeButton(tr("Stop"), QStringLiteral("stopButton"),
                       tr("Finish the current step, save a checkpoint, then end the run"))),
      pauseResume_(makeButton(tr("Pause"), QStringLiteral("pauseResumeButton"),
                              tr("Stop stepping after the current step; the processes stay alive"))),
      checkpoint_(makeButton(tr("Checkpoint now"), QStringLiteral("checkpointButton"),
                             tr("Save a step checkpoint after the current step, then go on"))),
      kill_(makeButton(tr("Kill"), QStringLiteral("killButton"), tr("Abort now, without a checkpoint"))),
      message_(new QLabel) {
  setObjectName(QStringLiteral("runControlBar"));
  // Red instead of a confirmation dialog: the one button that loses work looks it.
  kill_->setStyleSheet(
      QStringLiteral("QPushButton { color: white; background-color: #b3261e; font-weight: bold; }"
                     "QPushButton:disabled { color: #eee; background-color: #d9a3a0; }"));
  message_->setObjectName(QStringLiteral("controlMessage"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(stop_);
  layout->addWidget(pauseResume_);
  layout->addWidget(checkpoint_);
  layout->addSpacing(12);  // apart from the others, so it is not hit by mistake
  layout->addWidget(kill_);
  layout->addWidget(message_, 1);

  connect(stop_, &QPushButton::clicked, client_, [this] { client_->stop(/*checkpoint=*/true); });
  connect(kill_, &QPushButton::clicked, client_, [this] { client_->kill(); });
  connect(checkpoint_, &QPushButton::clicked, client_, [this] { client_->checkpoint(); });
  connect(pauseResume_, &QPushButton::clicked, this, &RunControlBar::onPauseResume);

  connect(client_, &app::ControlClient::runDirChanged, this, [this] {
    exitShown_ = false;
    showMessage({}, false);  // about the previous run
    updateButtons();
  });
  connect(client_, &app::ControlClient::pendingChanged, this, &RunControlBar::updateButtons);
  connect(client_, &app::ControlClient::runStateChanged, this, &RunControlBar::updateButtons);
  connect(client_, &app::ControlClient::commandWritten, this, &RunControlBar::onWritten);
  connect(client_, &app::ControlClient::acknowledged, this, &RunControlBar::onAcknowledged);
  connect(client_, &app::ControlClient::timedOut, this, &RunControlBar::onTimedOut);
  connect(client_, &app::ControlClient::commandFailed, this,
          [this](const app::ControlRequest&, const QString& message) { showMessage(message, true); });
  updateButtons();
}

void RunControlBar::setLauncher(app::Launcher* launcher) {
  if (launcher_ != nullptr) launcher_->disconnect(this);
  launcher_ = launcher;
  if (launcher == nullptr) return;
  connect(launcher, &app::Launcher::runDirectoryReady, this, [this](const QString& dir) {
    client_->setRunDir(dir);
    client_->setRunState(RunState::kStarting);
  });
  connect(launcher, &app::Launcher::finished, this, &RunControlBar::onLauncherFinished);
  connect(launcher, &app::Launcher::failed, this,
          [this](const QString& message) { showMessage(message, true); });
}

QString RunControlBar::message() const {
  return message_->text();
}

void RunControlBar::updateButtons() {
  const std::optional<RunState> state = client_->runState();
  const bool live = !client_->runDir().isEmpty() && !(state && protocol::isTerminal(*state));
  const bool stopping = state == RunState::kStopping;
  const bool ending =
      stopping || client_->isPending(ControlVerb::kStop) || client_->isPending(ControlVerb::kKill);
  const bool toggling = client_->isPending(ControlVerb::kPause) || client_->isPending(ControlVerb::kResume);

  stop_->setEnabled(live && !ending);
  kill_->setEnabled(live && !client_->isPending(ControlVerb::kKill));
  pauseResume_->setEnabled(live && !ending && !toggling);
  checkpoint_->setEnabled(live && !ending && !client_->isPending(ControlVerb::kCheckpoint));
  if (client_->isPaused()) {
    pauseResume_->setText(tr("Resume"));
    pauseResume_->setToolTip(tr("Continue training"));
  } else {
    pauseResume_->setText(tr("Pause"));
    pauseResume_->setToolTip(tr("Stop stepping after the current step; the processes stay alive"));
  }
}

void RunControlBar::onPauseResume() {
  if (client_->isPaused()) {
    client_->resume();
  } else {
    client_->pause();
  }
}

void RunControlBar::onWritten(const app::ControlRequest& request) {
  if (exitShown_) return;
  showMessage(
      tr("%1 sent; waiting for the run to acknowledge it").arg(capitalized(app::verbName(request.verb))),
      false);
}

void RunControlBar::onAcknowledged(const app::ControlRequest& request, bool ok, const QString& message,
                                   qint64 step) {
  // The follower may pass the stop's ack after the process has exited.
  if (exitShown_) return;
  const QString verb = capitalized(app::verbName(request.verb));
  if (ok) {
    showMessage(tr("%1 done at step %2").arg(verb).arg(step), false);
  } else {
    showMessage(tr("%1 refused by the run: %2").arg(verb, message), true);
  }
}

void RunControlBar::onTimedOut(const app::ControlRequest& request, const QString& message) {
  if (exitShown_) return;
  if (request.verb == ControlVerb::kKill && launcher_ != nullptr && launcher_->isActive()) {
    launcher_->kill();
    showMessage(tr("%1; killed the process instead (SIGKILL)").arg(message), true);
    return;
  }
  showMessage(message, true);
}

void RunControlBar::onLauncherFinished(int exitCode, app::ExitKind how) {
  const bool clean = how == app::ExitKind::kExited && exitCode == 0;
  client_->setRunState(clean ? RunState::kFinished : RunState::kFailed);
  showMessage(tr("flamingo-train %1").arg(app::describeExit(exitCode, how)), !clean);
  exitShown_ = true;
}

void RunControlBar::showMessage(const QString& text, bool problem) {
  message_->setText(text);
  message_->setStyleSheet(problem ? QStringLiteral("color: #b3261e") : QStringLiteral("color: #555"));
}

}  // namespace fs::ui

#include "app/launch/launcher.h"

#include <cstring>

// NOTE [Launch signals]
// One launch at a time: launch() creates a new run directory under the
// request's run root, writes config.yaml into it, and starts
// `flamingo-train train` on it. Everything comes back as signals, in this order:
//   stateChanged(kPreparing) -> runDirectoryReady -> stateChanged(kStarting)
//   -> stateChanged(kRunning) + started -> outputLine... -> stateChanged(kExited) + finished
// or stateChanged(kFailed) + failed at any point before started. The state
// changes first, so a handler of finished / failed may launch again at once
// (a launcher launches again once the previous launch is not isActive()).
//
// The run directory is the control channel (app/control/control_client.h);
// terminate() and kill() act on the process itself, for a run that no longer
// reads its control files.

namespace fs::app {

QString launchStateName(LaunchState state) {
  switch (state) {
    case LaunchState::kIdle:
      return QStringLiteral("idle");
    case LaunchState::kPreparing:
      return QStringLiteral("preparing");
    case LaunchState::kStarting:
      return QStringLiteral("starting");
    case LaunchState::kRunning:
      return QStringLiteral("running");
    case LaunchState::kExited:
      return QStringLiteral("exited");
    case LaunchState::kFailed:
      return QStringLiteral("failed");
  }
  return QStringLiteral("?");
}

bool isActive(LaunchState state) {
  return state == LaunchState::kPreparing || state == LaunchState::kStarting ||
         state == LaunchState::kRunning;
}

QString describeExit(int exitCode, ExitKind how) {
  if (how == ExitKind::kExited) return QStringLiteral("exited with code %1").arg(exitCode);
  // strsignal's text ("Killed", "Segmentation fault") is what a shell prints.
  return QStringLiteral("killed by signal %1 (%2)")
      .arg(exitCode)
      .arg(QString::fromLocal8Bit(::strsignal(exitCode)));
}

Launcher::Launcher(QObject* parent) : QObject(parent) {
  qRegisterMetaType<fs::app::LaunchRequest>();
  qRegisterMetaType<fs::app::LaunchState>();
  qRegisterMetaType<fs::app::ExitKind>();
  qRegisterMetaType<fs::app::OutputChannel>();
}

Launcher::~Launcher() = default;

void Launcher::setState(LaunchState state) {
  if (state == state_) return;
  state_ = state;
  emit stateChanged(state);
}

}  // namespace fs::app

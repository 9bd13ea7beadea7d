#include "app/launch/launcher.h"

#include <cstring>

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

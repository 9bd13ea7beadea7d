// What a launcher is asked to start, and the words it reports back in.
//
// Transport-neutral on purpose: the local launcher (QProcess), and later the
// SSH and SLURM launchers, take the same request and report with the same
// states and exit kinds (launcher.h).
//
// Thread-safety: plain values.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>

#include "backend/protocol/config/config_types.h"

namespace fs::app {

struct LaunchRequest {
  protocol::RunConfig config;  // as edited; the overrides below are applied on top
  QString runRoot;             // the new run directory is created under it (created if missing)
  QString name;                // run name; empty = config.name; the directory is <name>-<time>
  QStringList overrides;       // "path=value", as `flamingo-train --set` takes them
  // SSH and SLURM launches: flamingo-train on the hosts, a path or a name looked up on
  // the login PATH; empty = "flamingo-train". runRoot is then on the hosts too (empty =
  // launch.remote_workdir, else ~/flamingo-runs).
  QString remoteEngine;
  // The user approved the config's pipe: shard commands (or typed them): the engine gets
  // --allow-pipe. Set only by the GUI's approval step (NOTE [Pipe approval] in
  // backend/protocol/config/pipe_commands.h); without it the engine refuses such a config.
  bool allowPipe = false;
};

// Where a launch stands. kFailed: it never got a process (preparation or start
// failed); a process that ran and ended, with any exit code, is kExited.
enum class LaunchState { kIdle, kPreparing, kStarting, kRunning, kExited, kFailed };
QString launchStateName(LaunchState state);  // "idle", "preparing", ...
// True while preparing, starting or running: terminate() and kill() act.
bool isActive(LaunchState state);

// How a process ended: by itself (exit code) or by a signal (the code is the
// signal number), e.g. SIGKILL or a segfault.
enum class ExitKind { kExited, kCrashed };
// "exited with code 0", "killed by signal 9 (Killed)".
QString describeExit(int exitCode, ExitKind how);

// Which stream an output line came from.
enum class OutputChannel { kStdout, kStderr };

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::LaunchRequest)
Q_DECLARE_METATYPE(fs::app::LaunchState)
Q_DECLARE_METATYPE(fs::app::ExitKind)
Q_DECLARE_METATYPE(fs::app::OutputChannel)

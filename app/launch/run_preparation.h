// Preparing a local launch: the resolved config, a new run directory and its
// config.yaml, and the engine to start on it (docs/run-directory.md).
//
// The --set overrides are applied here and the result written to config.yaml;
// the engine is then started with that file and no overrides. It refuses a run
// directory whose config.yaml differs from the config it was given, so the
// file must already be the resolved config.
//
// Everything here touches the disk: call it on a worker thread
// (LaunchFileWorker), never on the GUI thread.
// Thread-safety: reentrant functions.
#pragma once

#include <QDateTime>
#include <QString>

#include "app/launch/engine_locator.h"
#include "app/launch/launch_request.h"

namespace fs::app {

struct PreparedRun {
  QString runDir;      // absolute path of the new run directory
  QString configFile;  // <runDir>/config.yaml
  QString enginePath;  // the flamingo-train to start
  QString error;       // set when nothing may be started; no run directory is left then
  bool isOk() const { return error.isEmpty(); }
};

// `name` with every character outside [A-Za-z0-9._-] replaced by '_' and no
// leading '.', so it is a visible directory name; "run" when nothing is left.
QString sanitizeRunName(const QString& name);

// Creates <root>/<base>, or <base>-2, <base>-3, ... when taken: never reuses an
// existing directory, even one another process creates at the same moment (the
// directory is made with mkdir, which fails when the name exists). Then adds
// control/, control/done/ and logs/. Returns the directory or an error naming it.
struct CreatedDir {
  QString path;
  QString error;
};
CreatedDir createUniqueRunDirectory(const QString& root, const QString& base);

// The config a launch runs: the overrides applied, `name` and `run_root` set
// (run_root made absolute only when `absoluteRoot`), validated. Errors list
// their field paths; warnings do not stop a launch.
struct ResolvedConfig {
  protocol::RunConfig config;
  QString error;
  bool isOk() const { return error.isEmpty(); }
};
ResolvedConfig resolveLaunchConfig(const LaunchRequest& request, bool absoluteRoot = true);

// Locates the engine, resolves and validates the config (overrides applied,
// `name` and `run_root` set), creates "<name>-<yyyyMMdd-HHmmss of now>" under the
// run root and writes config.yaml there atomically. Validation warnings do not
// stop a launch; errors do, and are listed with their field paths.
PreparedRun prepareRun(const LaunchRequest& request, const EngineSearch& search, const QDateTime& now);

}  // namespace fs::app

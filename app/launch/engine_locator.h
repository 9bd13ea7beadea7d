// Where flamingo-train is: the engine executable the local launcher starts.
//
// Looked for, in this order:
//  1. next to the running executable (QCoreApplication::applicationDirPath()):
//     the engine built or installed with this app speaks its protocol version;
//  2. the explicit path setting, when one is set: a set path that is not an
//     executable is an error, never silently replaced by another binary;
//  3. each directory of PATH, only when no explicit path is set.
// The error names every place looked at, so the user can tell what to fix.
//
// locateEngine() stats files: call it off the GUI thread.
// Thread-safety: plain values and a reentrant function.
#pragma once

#include <QString>

namespace fs::app {

inline constexpr char kEngineExecutableName[] = "flamingo-train";

struct EngineSearch {
  QString appDir;        // directory of the running executable; empty = skip
  QString explicitPath;  // the "flamingo-train path" setting; empty = not set
  QString pathVariable;  // PATH, ':'-separated

  // appDir = applicationDirPath() (when a QCoreApplication exists), PATH from
  // the environment.
  static EngineSearch fromEnvironment(const QString& explicitPath = {});
};

struct EngineLocation {
  QString path;   // absolute path of the executable; empty when not found
  QString error;  // why not found, naming every place looked at
  bool found() const { return !path.isEmpty(); }
};

EngineLocation locateEngine(const EngineSearch& search);

}  // namespace fs::app

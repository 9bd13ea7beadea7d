#include "app/launch/engine_locator.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStringList>

namespace fs::app {
namespace {

bool isExecutableFile(const QString& path) {
  const QFileInfo info(path);
  return info.isFile() && info.isExecutable();
}

}  // namespace

EngineSearch EngineSearch::fromEnvironment(const QString& explicitPath) {
  EngineSearch search;
  if (QCoreApplication::instance() != nullptr) search.appDir = QCoreApplication::applicationDirPath();
  search.explicitPath = explicitPath;
  search.pathVariable = qEnvironmentVariable("PATH");
  return search;
}

EngineLocation locateEngine(const EngineSearch& search) {
  const QString exe = QString::fromLatin1(kEngineExecutableName);
  QStringList looked;
  if (!search.appDir.isEmpty()) {
    const QString candidate = QDir(search.appDir).absoluteFilePath(exe);
    if (isExecutableFile(candidate)) return {QFileInfo(candidate).absoluteFilePath(), {}};
    looked << QStringLiteral("next to the application (%1)").arg(candidate);
  }
  if (!search.explicitPath.isEmpty()) {
    if (isExecutableFile(search.explicitPath)) return {QFileInfo(search.explicitPath).absoluteFilePath(), {}};
    const QString why = QFileInfo::exists(search.explicitPath) ? QStringLiteral("not an executable file")
                                                               : QStringLiteral("does not exist");
    looked << QStringLiteral("at the flamingo-train path setting (%1: %2)").arg(search.explicitPath, why);
    return {{},
            QStringLiteral(
                "%1 not found: looked %2. Fix the flamingo-train path setting or clear it to use PATH.")
                .arg(exe, looked.join(QStringLiteral("; ")))};
  }
  const QStringList dirs = search.pathVariable.split(QLatin1Char(':'), Qt::SkipEmptyParts);
  for (const QString& dir : dirs) {
    const QString candidate = QDir(dir).absoluteFilePath(exe);
    if (isExecutableFile(candidate)) return {QFileInfo(candidate).absoluteFilePath(), {}};
  }
  looked << QStringLiteral("at the flamingo-train path setting (not set)");
  looked << (dirs.isEmpty() ? QStringLiteral("in PATH (empty)")
                            : QStringLiteral("in PATH (%1)").arg(dirs.join(QLatin1Char(':'))));
  return {{},
          QStringLiteral("%1 not found: looked %2. Build it (ninja flamingo_train), install it next to "
                         "flamingo-studio, or set the flamingo-train path setting.")
              .arg(exe, looked.join(QStringLiteral("; ")))};
}

}  // namespace fs::app

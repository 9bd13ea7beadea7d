#include "app/launch/launch_file_worker.h"

#include <QDir>

#include "app/launch/run_preparation.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app {

LaunchFileWorker::LaunchFileWorker(QObject* parent) : QObject(parent) {}

void LaunchFileWorker::prepare(quint64 ticket, const LaunchRequest& request, const EngineSearch& search,
                               const QDateTime& now) {
  closeLog();
  const PreparedRun run = prepareRun(request, search, now);
  if (run.isOk()) {
    const QString logs = QString::fromLatin1(protocol::kLogsDirName.data(), protocol::kLogsDirName.size());
    log_.setFileName(
        QDir(run.runDir).filePath(logs + QLatin1Char('/') + QLatin1String(kLauncherLogFileName)));
    logFailed_ = false;
    if (!log_.open(QIODevice::WriteOnly | QIODevice::Append | QIODevice::Text)) {
      logFailed_ = true;
      emit logFailed(QStringLiteral("cannot open %1: %2; the engine's output is shown but not kept")
                         .arg(log_.fileName(), log_.errorString()));
    }
  }
  emit prepared(ticket, run.runDir, run.configFile, run.enginePath, run.error);
}

void LaunchFileWorker::appendLog(const QByteArray& text) {
  if (!log_.isOpen()) return;
  if (log_.write(text) != text.size() || !log_.flush()) {
    if (!logFailed_) {
      logFailed_ = true;
      emit logFailed(QStringLiteral("cannot write %1: %2; later output is shown but may not be kept")
                         .arg(log_.fileName(), log_.errorString()));
    }
  }
}

void LaunchFileWorker::closeLog() {
  if (log_.isOpen()) log_.close();
}

}  // namespace fs::app

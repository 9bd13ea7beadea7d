// LaunchFileWorker: the local launcher's disk work, off the GUI thread.
//
// Internal to LocalLauncher, which owns one on a WorkerThread. prepare()
// makes the run directory (run_preparation.h) and opens its
// logs/launcher.log; appendLog() and closeLog() write that log. Requests run
// one at a time in the order they were made.
//
// Thread-safety: lives on its worker thread; prepare() is called there through
// a queued functor (its request has no registered meta type).
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QFile>
#include <QObject>
#include <QString>

#include "app/launch/engine_locator.h"
#include "app/launch/launch_request.h"

namespace fs::app {

inline constexpr char kLauncherLogFileName[] = "launcher.log";  // in <run>/logs/

class LaunchFileWorker : public QObject {
  Q_OBJECT
 public:
  explicit LaunchFileWorker(QObject* parent = nullptr);

  // Prepares a run (closing the previous log), then emits prepared().
  void prepare(quint64 ticket, const fs::app::LaunchRequest& request, const fs::app::EngineSearch& search,
               const QDateTime& now);

 public slots:
  // Appends to the open launcher.log and flushes, so a crash of the app keeps
  // what the engine said. The first failure emits logFailed(); later ones are quiet.
  void appendLog(const QByteArray& text);
  void closeLog();

 signals:
  // `error` empty: runDir and configFile exist and enginePath is executable.
  void prepared(quint64 ticket, const QString& runDir, const QString& configFile, const QString& enginePath,
                const QString& error);
  void logFailed(const QString& message);

 private:
  QFile log_;
  bool logFailed_ = false;
};

}  // namespace fs::app

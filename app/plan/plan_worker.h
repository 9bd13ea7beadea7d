// PlanWorker: runs `flamingo-train plan --json` off the GUI thread.
//
// Internal to PlanRunner, which owns one on a WorkerThread. plan() locates the
// engine, writes the request's config to a temporary config.yaml (or reads the
// given file when the request asks for the config's own strategy and policy),
// and starts the engine as a QProcess on this thread; its event loop stays
// free, so cancel() reaches it while the engine runs. At the end the JSON is
// parsed here, never on the GUI thread, and one of planned / failed /
// cancelled follows, with the request's ticket.
//
// A new plan() kills the one still running first. Killing waits for the
// child's exit, so no zombie is left and the temporary file is gone when
// cancelled() is emitted.
//
// Thread-safety: lives on its worker thread; plan() is called there through a
// queued functor.
#pragma once

#include <QObject>
#include <QProcess>
#include <QTemporaryDir>
#include <atomic>
#include <memory>

#include "app/launch/engine_locator.h"
#include "app/plan/plan.h"
#include "app/plan/plan_request.h"

namespace fs::app {

class PlanWorker : public QObject {
  Q_OBJECT
 public:
  explicit PlanWorker(QObject* parent = nullptr);
  ~PlanWorker() override;

  void plan(quint64 ticket, const fs::app::PlanRequest& request, const fs::app::EngineSearch& search);
  // Any thread: requests up to `ticket` are cancelled, also one still queued
  // (it then ends in cancelled() without starting). Follow with cancel().
  void markCancelled(quint64 ticket) { cancelUpTo_.store(ticket); }

 public slots:
  // Kills the engine of `ticket` if it still runs; then cancelled(ticket).
  void cancel(quint64 ticket);
  // Kills what runs and ignores every later request: for the owner's destructor.
  void shutdown();

 signals:
  void processStarted(quint64 ticket, qint64 pid);
  void planned(quint64 ticket, const fs::app::Plan& plan);
  // A fit request's answer; also when nothing fits (FitResult::refusal, the engine's exit 1).
  void fitted(quint64 ticket, const fs::app::FitResult& fit);
  void failed(quint64 ticket, const fs::app::PlanError& error);
  void cancelled(quint64 ticket);

 private:
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  // Kills and reaps the child, drops the temporary file; false when none ran.
  bool stopCurrent();
  void fail(PlanErrorKind kind, const QString& message);

  quint64 ticket_ = 0;
  bool fit_ = false;  // the running request is a fit
  QString enginePath_;
  QProcess* process_ = nullptr;
  std::unique_ptr<QTemporaryDir> tempDir_;
  bool shutDown_ = false;
  std::atomic<quint64> cancelUpTo_{0};
};

}  // namespace fs::app

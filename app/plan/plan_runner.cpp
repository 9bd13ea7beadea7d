#include "app/plan/plan_runner.h"

#include "app/common/worker_thread.h"
#include "app/plan/plan_worker.h"

namespace fs::app {

PlanRunner::PlanRunner(EngineSearch search, QObject* parent)
    : QObject(parent),
      search_(std::move(search)),
      thread_(std::make_unique<WorkerThread<PlanWorker>>(new PlanWorker, QStringLiteral("memory-planner"))) {
  qRegisterMetaType<fs::app::Plan>();
  qRegisterMetaType<fs::app::PlanError>();
  qRegisterMetaType<fs::app::FitResult>();
  PlanWorker* worker = thread_->worker();
  connect(worker, &PlanWorker::processStarted, this, [this](quint64 ticket, qint64 pid) {
    if (ticket == ticket_) emit processStarted(pid);
  });
  connect(worker, &PlanWorker::planned, this, [this](quint64 ticket, const Plan& plan) {
    if (ticket != ticket_) return;
    setRunning(false);
    emit planned(plan);
  });
  connect(worker, &PlanWorker::fitted, this, [this](quint64 ticket, const FitResult& fit) {
    if (ticket != ticket_) return;
    setRunning(false);
    emit fitted(fit);
  });
  connect(worker, &PlanWorker::failed, this, [this](quint64 ticket, const PlanError& error) {
    if (ticket != ticket_) return;
    setRunning(false);
    emit failed(error);
  });
  connect(worker, &PlanWorker::cancelled, this, [this](quint64 ticket) {
    if (ticket != ticket_) return;
    setRunning(false);
    emit cancelled();
  });
}

PlanRunner::~PlanRunner() {
  // The child is killed on the worker's own thread, where its QProcess lives.
  QMetaObject::invokeMethod(thread_->worker(), &PlanWorker::shutdown, Qt::BlockingQueuedConnection);
}

void PlanRunner::plan(const PlanRequest& request) {
  const quint64 ticket = ++ticket_;
  setRunning(true);
  PlanWorker* worker = thread_->worker();
  QMetaObject::invokeMethod(
      worker, [worker, ticket, request, search = search_] { worker->plan(ticket, request, search); });
}

void PlanRunner::cancel() {
  if (!running_) return;
  thread_->worker()->markCancelled(ticket_);
  QMetaObject::invokeMethod(thread_->worker(),
                            [worker = thread_->worker(), ticket = ticket_] { worker->cancel(ticket); });
}

void PlanRunner::setRunning(bool running) {
  if (running == running_) return;
  running_ = running;
  emit runningChanged(running);
}

}  // namespace fs::app

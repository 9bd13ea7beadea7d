// PlanRunner: asks `flamingo-train plan --json` for a memory plan without
// blocking the GUI thread.
//
// plan() hands the request to a PlanWorker on its own thread and returns at
// once; one of planned / failed / cancelled follows. A new plan() supersedes
// the one in progress (its child is killed and nothing of it is reported), so
// a view can re-plan on every edit. cancel() kills the child; cancelled()
// comes when it has been reaped.
//
// Errors are values (PlanError): the engine not found (every place looked
// at), the engine's stderr on a non-zero exit (the CLI names the config
// field), or the JSON field that is missing.
//
// Ownership: owns its worker thread; the destructor kills a running child.
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
#pragma once

#include <QObject>
#include <memory>

#include "app/launch/engine_locator.h"
#include "app/plan/plan.h"
#include "app/plan/plan_request.h"

namespace fs::app {

class PlanWorker;
template <class Worker>
class WorkerThread;

class PlanRunner : public QObject {
  Q_OBJECT
 public:
  explicit PlanRunner(EngineSearch search = EngineSearch::fromEnvironment(), QObject* parent = nullptr);
  ~PlanRunner() override;

  const EngineSearch& engineSearch() const { return search_; }
  void setEngineSearch(const EngineSearch& search) { search_ = search; }
  bool isRunning() const { return running_; }

  void plan(const PlanRequest& request);

 public slots:
  void cancel();

 signals:
  void runningChanged(bool running);
  void processStarted(qint64 pid);
  void planned(const fs::app::Plan& plan);
  void fitted(const fs::app::FitResult& fit);  // a request with PlanRequest::fit
  void failed(const fs::app::PlanError& error);
  void cancelled();

 private:
  void setRunning(bool running);

  EngineSearch search_;
  quint64 ticket_ = 0;  // of the latest request; results of older ones are dropped
  bool running_ = false;
  std::unique_ptr<WorkerThread<PlanWorker>> thread_;
};

}  // namespace fs::app

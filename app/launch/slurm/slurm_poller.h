// SlurmPoller: follows a set of SLURM jobs with one batched squeue per poll
// (NOTE [Reading squeue] in slurm_jobs.h) and reports every job's row.
//
// A worker QObject: move it to a WorkerThread (app/common/worker_thread.h) and
// call its slots with queued connections; it polls every kIntervalMs. After a
// failed poll it waits twice as long each time (up to kMaxBackoffMs), and once
// a poll succeeds it is back to kIntervalMs: a cluster's controller is shared,
// so the app asks gently.
//
// A job that has ended (or left squeue) is reported once, with scontrol's row
// (its end state and exit code), and no longer polled; one the controller has
// forgotten is reported with state "UNKNOWN" and reason "forgotten by the
// controller" and is no longer polled.
//
// Ownership: shares the Host with whoever made it. Thread-safety: lives on
// one thread (its worker thread); stop() may be called from any thread.
#pragma once

#include <QList>
#include <QObject>
#include <QStringList>
#include <QTimer>
#include <atomic>
#include <memory>

#include "app/launch/slurm/slurm_jobs.h"

Q_DECLARE_METATYPE(fs::app::cluster::SlurmJobRow)

namespace fs::app::cluster {

class SlurmPoller : public QObject {
  Q_OBJECT
 public:
  static constexpr int kIntervalMs = 10'000;
  static constexpr int kMaxBackoffMs = 160'000;

  SlurmPoller(std::shared_ptr<remote::Host> host, std::vector<std::string> prefix = {},
              QObject* parent = nullptr);

  // The delay before the next poll after `failures` failed polls in a row.
  static int delayAfter(int failures, int interval_ms = kIntervalMs);

 public slots:
  // The jobs to follow (replaces the set); polling starts at once.
  void watch(const QStringList& ids);
  // Polls now (and restarts the interval).
  void pollNow();
  // No more polls; a poll in progress is cancelled.
  void stop();
  // For tests: a shorter interval.
  void setIntervalMs(int ms) { interval_ms_ = ms; }

 signals:
  // Every watched job's row (those still known), after each successful poll.
  void rows(const QList<fs::app::cluster::SlurmJobRow>& rows);
  // A failed poll; the next one comes after `retry_ms`.
  void failed(const QString& message, int retry_ms);

 private:
  void schedule(int ms);

  std::shared_ptr<remote::Host> host_;
  std::vector<std::string> prefix_;
  QStringList ids_;
  QTimer* timer_ = nullptr;
  std::atomic<bool> stopped_{false};
  int failures_ = 0;
  int interval_ms_ = kIntervalMs;
};

}  // namespace fs::app::cluster

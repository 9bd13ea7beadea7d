// WorkerThread: one QThread running one worker QObject, for the "GUI thread
// does no I/O" rule (style.md point 9).
//
// Requests go to the worker as queued slot calls (connect a signal of a
// GUI-thread object to a worker slot, or QMetaObject::invokeMethod), results
// come back as the worker's signals, delivered on the receiver's thread.
//
// Ownership: takes the worker (which must have no parent) and deletes it
// after stopping the thread in the destructor; requests still queued then may
// be dropped (see finishPending()). Cancellation is the worker's business
// (an std::atomic<bool> it polls); ask it to cancel before destroying this so
// the destructor does not wait for a long task.
//
// Thread-safety: construct, use and destroy from one thread (usually the GUI
// thread); worker() may be used from that thread only to connect or invoke.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QString>
#include <QThread>
#include <QTimer>

namespace fs::app {

template <class Worker>
class WorkerThread {
 public:
  // REQUIRES: worker != nullptr and worker->parent() == nullptr.
  WorkerThread(Worker* worker, const QString& name) : worker_(worker) {
    thread_.setObjectName(name);
    worker_->moveToThread(&thread_);
    thread_.start();
  }
  ~WorkerThread() {
    // NOTE [Worker timers]: a QTimer may be stopped only on its own thread, and the
    // worker is deleted here, on the owner's. Its timers are stopped on the worker's
    // thread as that thread's last act (QThread::finished is emitted there).
    QObject::connect(
        &thread_, &QThread::finished, worker_,
        [w = worker_] {
          for (QTimer* t : w->template findChildren<QTimer*>()) t->stop();
        },
        Qt::DirectConnection);
    thread_.quit();
    thread_.wait();
    delete worker_;  // its thread has stopped: no event can reach it any more
  }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  Worker* worker() const { return worker_; }

  // Blocks until the worker has handled every request queued before this
  // call (requests run in order). For owners whose pending requests must not
  // be dropped, e.g. a save asked for just before the window closes.
  // REQUIRES: not called from the worker's thread.
  void finishPending() {
    QMetaObject::invokeMethod(
        worker_, [] {}, Qt::BlockingQueuedConnection);
  }

 private:
  QThread thread_;
  Worker* worker_;
};

}  // namespace fs::app

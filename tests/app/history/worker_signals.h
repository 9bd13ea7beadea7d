// Watching a HistoryWorker that runs on another thread, without races.
//
// QSignalSpy connects directly, so a spy on the worker itself would append
// from the worker's thread while the test reads it, and a signal emitted
// before spy.wait() starts would be missed. Instead every signal of the
// worker is forwarded (queued) to a mirror object on the test's thread, and
// the test spies on the mirror: signals arrive in order, only while the test
// runs its event loop (inside wait()).
#pragma once

#include "app/history/history_worker.h"

namespace fs::test {

// A HistoryWorker used only for its signals; it is never opened.
inline void mirrorSignals(app::HistoryWorker* from, app::HistoryWorker* mirror) {
  using W = app::HistoryWorker;
  const auto q = Qt::QueuedConnection;
  QObject::connect(from, &W::opened, mirror, &W::opened, q);
  QObject::connect(from, &W::failed, mirror, &W::failed, q);
  QObject::connect(from, &W::importProgress, mirror, &W::importProgress, q);
  QObject::connect(from, &W::imported, mirror, &W::imported, q);
  QObject::connect(from, &W::importFailed, mirror, &W::importFailed, q);
  QObject::connect(from, &W::queried, mirror, &W::queried, q);
  QObject::connect(from, &W::configDiff, mirror, &W::configDiff, q);
  QObject::connect(from, &W::referenceCurves, mirror, &W::referenceCurves, q);
  QObject::connect(from, &W::changed, mirror, &W::changed, q);
}

}  // namespace fs::test

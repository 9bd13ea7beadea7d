// RunCheckpointList: the checkpoints a followed run has written, from its
// `checkpoint` events (newest last); a double-click asks to inspect one.
// Reads nothing from disk: the paths are the events' (made absolute against
// the run directory; a remote run's "host:/dir" gives "host:/dir/<event path>").
//
// Thread-safety: GUI thread only.
#pragma once

#include <QListWidget>

#include "backend/protocol/wire/events.h"

namespace fs::ui {

class RunCheckpointList : public QListWidget {
  Q_OBJECT
 public:
  // An event's path against `runDir` (a local directory or "host:/dir").
  static QString pathOf(const QString& runDir, const QString& eventPath);
  explicit RunCheckpointList(QWidget* parent = nullptr);

  // A new run: forgets the last one's checkpoints.
  void reset(const QString& runDir);
  void add(const fs::protocol::CheckpointEvent& event);
  // The absolute path of row `row`.
  QString pathAt(int row) const;

 signals:
  void inspectRequested(const QString& path);

 private:
  QString runDir_;
};

}  // namespace fs::ui

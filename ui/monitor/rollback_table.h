// RollbackTable: the loss-spike guard's rollbacks of the followed run, one row each:
// step -> to_step, dataset, reason, batches skipped, learning-rate factor.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QTableWidget>

#include "backend/protocol/wire/events.h"

namespace fs::ui {

class RollbackTable : public QTableWidget {
  Q_OBJECT
 public:
  enum Column { kSteps, kDataset, kReason, kSkipped, kLrFactor, kColumnCount };

  explicit RollbackTable(QWidget* parent = nullptr);

  void addRollback(const protocol::RollbackEvent& rollback);
  void clearRollbacks();
  // The text of a cell, as shown (tests).
  QString text(int row, Column column) const;
};

}  // namespace fs::ui

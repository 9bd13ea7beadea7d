#include "ui/monitor/rollback_table.h"

#include <QHeaderView>

namespace fs::ui {

RollbackTable::RollbackTable(QWidget* parent) : QTableWidget(0, kColumnCount, parent) {
  setObjectName(QStringLiteral("rollbackTable"));
  setHorizontalHeaderLabels(
      {tr("Rollback"), tr("Dataset"), tr("Reason"), tr("Batches skipped"), tr("LR factor")});
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionBehavior(QAbstractItemView::SelectRows);
  verticalHeader()->setVisible(false);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setSectionResizeMode(kReason, QHeaderView::Stretch);
}

void RollbackTable::addRollback(const protocol::RollbackEvent& r) {
  const int row = rowCount();
  insertRow(row);
  auto set = [&](Column c, const QString& text, const QString& tip = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(tip.isEmpty() ? text : tip);
    if (c == kSkipped || c == kLrFactor) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    setItem(row, c, item);
  };
  set(kSteps, tr("step %1 \u2192 %2").arg(r.step).arg(r.to_step),
      tr("back to %1 (rollback %2 of at most %3)")
          .arg(QString::fromStdString(r.checkpoint))
          .arg(r.rollbacks)
          .arg(r.max_rollbacks));
  set(kDataset, QString::fromStdString(r.dataset));
  set(kReason, QString::fromStdString(r.reason),
      tr("%1: %2").arg(QString::fromStdString(r.rule), QString::fromStdString(r.reason)));
  set(kSkipped, QString::number(r.batches_skipped));
  set(kLrFactor, r.lr_factor == 1 ? tr("none")
                 : r.lr_factor_steps > 0
                     ? tr("\u00d7 %1 for %2 steps").arg(r.lr_factor).arg(r.lr_factor_steps)
                     : tr("\u00d7 %1").arg(r.lr_factor));
}

void RollbackTable::clearRollbacks() {
  setRowCount(0);
}

QString RollbackTable::text(int row, Column column) const {
  const QTableWidgetItem* i = item(row, column);
  return i ? i->text() : QString();
}

}  // namespace fs::ui

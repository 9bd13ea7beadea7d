#include "ui/monitor/heartbeat_table.h"

#include <QHeaderView>
#include <QStringList>
#include <algorithm>

namespace fs::ui {
namespace {

constexpr int kWaitedOnRole = Qt::UserRole + 1;

QString seconds(std::int64_t ms) {
  return QStringLiteral("%1 s").arg(static_cast<double>(ms) / 1000.0, 0, 'f', 1);
}

}  // namespace

HeartbeatTable::HeartbeatTable(QWidget* parent) : QTableWidget(0, kColumnCount, parent) {
  setObjectName(QStringLiteral("heartbeatTable"));
  setHorizontalHeaderLabels(
      {tr("Rank"), tr("Last collective"), tr("Collective seq"), tr("Behind"), tr("Not advanced for")});
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  verticalHeader()->setVisible(false);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  horizontalHeader()->setSectionResizeMode(kCollective, QHeaderView::Stretch);
}

void HeartbeatTable::setBoard(const app::HeartbeatBoard& board) {
  const auto& ranks = board.ranks();
  const std::vector<int> waited = board.waitedOn();
  setRowCount(static_cast<int>(ranks.size()));
  for (int row = 0; row < static_cast<int>(ranks.size()); ++row) {
    const app::RankBeat& r = ranks[static_cast<std::size_t>(row)];
    const bool isWaited = std::find(waited.begin(), waited.end(), r.rank) != waited.end();
    const QStringList cells = {QString::number(r.rank), QString::fromStdString(r.last_collective),
                               QString::number(r.collective_seq), QString::number(r.behind),
                               seconds(board.stuckMs(r))};
    for (int c = 0; c < kColumnCount; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c != kCollective) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      item->setData(kWaitedOnRole, isWaited);
      if (isWaited) item->setForeground(QColor(0xb0, 0x20, 0x20));
      setItem(row, c, item);
    }
  }
  summary_ = summary(board);
  setToolTip(summary_);
}

QString HeartbeatTable::summary(const app::HeartbeatBoard& board) {
  const auto& ranks = board.ranks();
  if (ranks.empty()) return tr("No per-rank heartbeat yet.");
  const std::vector<int> waited = board.waitedOn();
  if (waited.empty())
    return tr("All %n rank(s) at collective %1.", nullptr, static_cast<int>(ranks.size()))
        .arg(ranks.front().collective_seq);
  QStringList names;
  std::int64_t behind = 0;
  std::int64_t stuck = 0;
  for (const app::RankBeat& r : ranks) {
    if (std::find(waited.begin(), waited.end(), r.rank) == waited.end()) continue;
    names << QString::number(r.rank);
    behind = r.behind;
    stuck = std::max(stuck, board.stuckMs(r));
  }
  return tr("The others wait on rank %1: %2 collective(s) behind, not advanced for %3.")
      .arg(names.join(QStringLiteral(", ")))
      .arg(behind)
      .arg(seconds(stuck));
}

QString HeartbeatTable::text(int row, Column column) const {
  const QTableWidgetItem* i = item(row, column);
  return i ? i->text() : QString();
}

bool HeartbeatTable::isWaitedOn(int row) const {
  const QTableWidgetItem* i = item(row, kRank);
  return i != nullptr && i->data(kWaitedOnRole).toBool();
}

}  // namespace fs::ui

// HeartbeatTable: the per-rank heartbeat board (app/monitor/heartbeat_board.h) as a
// table: rank, last collective, collective seq, how far behind the most advanced rank,
// and for how long (by event time) its seq has not advanced; the ranks the others wait
// on are marked, and summary() says it in words.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QTableWidget>

#include "app/monitor/heartbeat_board.h"

namespace fs::ui {

class HeartbeatTable : public QTableWidget {
  Q_OBJECT
 public:
  enum Column { kRank, kCollective, kSeq, kBehind, kStuck, kColumnCount };

  explicit HeartbeatTable(QWidget* parent = nullptr);

  // Rebuilds the rows from the board.
  void setBoard(const app::HeartbeatBoard& board);
  // "all ranks at collective 101" / "ranks wait on rank 1: 4 collectives behind, ..."
  static QString summary(const app::HeartbeatBoard& board);
  const QString& summaryText() const { return summary_; }
  QString text(int row, Column column) const;
  // Whether the row's rank is one the others wait on.
  bool isWaitedOn(int row) const;

 private:
  QString summary_;
};

}  // namespace fs::ui

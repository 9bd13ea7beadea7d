// LogModel: rank log lines and warnings, appended in batches, capped; and
// LogFilter, the rows that pass a rank / level / text filter.
//
// Thousands of lines per second must not stall the GUI: lines come in as
// batches (one beginInsertRows per batch), the oldest are dropped in chunks
// once the cap is passed, and the view is a uniform-height list (log_view.h).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QAbstractListModel>
#include <QSortFilterProxyModel>
#include <QString>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::ui {

enum class LogLevel { kInfo, kWarning, kError };

struct LogLine {
  std::int64_t time_ms = 0;  // unix ms; 0: unknown (not shown)
  int rank = -1;             // -1: the run as a whole, no rank
  LogLevel level = LogLevel::kInfo;
  QString text;
  QString code;  // a warning's stable id ("slow_rank"), shown before the text
};

// The log lines of telemetry events (t = the event's unix ms).
LogLine logLineFrom(const protocol::WarningEvent& warning, std::int64_t t);
LogLine logLineFrom(const protocol::ErrorEvent& error, std::int64_t t);

class LogModel : public QAbstractListModel {
  Q_OBJECT
 public:
  enum Role { kRankRole = Qt::UserRole + 1, kLevelRole, kTextRole };
  static constexpr int kDefaultMaxLines = 200'000;

  explicit LogModel(QObject* parent = nullptr);

  void append(std::vector<LogLine> lines);
  void clear();
  // Past max, the oldest lines are dropped (a tenth of max at a time, so
  // the views re-index rarely).
  void setMaxLines(int max);
  const LogLine& line(int row) const { return lines_[std::size_t(row)]; }
  // Ranks seen so far, ascending (-1 for lines without one is not listed).
  const std::set<int>& ranks() const { return ranks_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

  // "12:01:02  rank 3  WARNING  slow_rank: ..." as the list shows it.
  static QString displayText(const LogLine& line);

 signals:
  void rankSeen(int rank);

 private:
  std::deque<LogLine> lines_;
  std::set<int> ranks_;
  int max_lines_ = kDefaultMaxLines;
};

class LogFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit LogFilter(QObject* parent = nullptr);

  // nullopt: every rank (and lines without one).
  void setRank(std::optional<int> rank);
  void setLevelShown(LogLevel level, bool shown);
  // Case-insensitive substring of the text, the code, or "rank N".
  void setText(const QString& text);

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  std::optional<int> rank_;
  bool shown_[3] = {true, true, true};
  QString text_;
};

}  // namespace fs::ui

#include "ui/logs/log_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <algorithm>

namespace fs::ui {

LogLine logLineFrom(const protocol::WarningEvent& warning, std::int64_t t) {
  return LogLine{t, warning.rank.value_or(-1), LogLevel::kWarning, QString::fromStdString(warning.message),
                 QString::fromStdString(warning.code)};
}

LogLine logLineFrom(const protocol::ErrorEvent& error, std::int64_t t) {
  return LogLine{t, error.rank.value_or(-1), LogLevel::kError, QString::fromStdString(error.message),
                 QString::fromStdString(error.where)};
}

LogModel::LogModel(QObject* parent) : QAbstractListModel(parent) {}

void LogModel::append(std::vector<LogLine> lines) {
  if (lines.empty()) return;
  const int first = int(lines_.size());
  beginInsertRows({}, first, first + int(lines.size()) - 1);
  std::vector<int> new_ranks;
  for (auto& line : lines) {
    if (line.rank >= 0 && ranks_.insert(line.rank).second) new_ranks.push_back(line.rank);
    lines_.push_back(std::move(line));
  }
  endInsertRows();
  for (int rank : new_ranks) emit rankSeen(rank);

  if (int(lines_.size()) > max_lines_) {
    const int drop = int(lines_.size()) - max_lines_ + max_lines_ / 10;
    beginRemoveRows({}, 0, std::min(drop, int(lines_.size())) - 1);
    lines_.erase(lines_.begin(),
                 lines_.begin() + std::min<std::ptrdiff_t>(drop, std::ptrdiff_t(lines_.size())));
    endRemoveRows();
  }
}

void LogModel::clear() {
  beginResetModel();
  lines_.clear();
  ranks_.clear();
  endResetModel();
}

void LogModel::setMaxLines(int max) {
  max_lines_ = std::max(max, 1);
}

int LogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(lines_.size());
}

QString LogModel::displayText(const LogLine& line) {
  QString out;
  if (line.time_ms > 0)
    out += QDateTime::fromMSecsSinceEpoch(line.time_ms).toString(QStringLiteral("HH:mm:ss")) +
           QStringLiteral("  ");
  out += line.rank >= 0 ? QStringLiteral("rank %1  ").arg(line.rank) : QStringLiteral("run     ");
  if (line.level == LogLevel::kWarning) out += QStringLiteral("WARNING  ");
  if (line.level == LogLevel::kError) out += QStringLiteral("ERROR  ");
  if (!line.code.isEmpty()) out += line.code + QStringLiteral(": ");
  return out + line.text;
}

QVariant LogModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const LogLine& l = line(index.row());
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole:
      return displayText(l);
    case Qt::BackgroundRole:
      if (l.level == LogLevel::kWarning) return QBrush(QColor(0xff, 0xf3, 0xe0));  // warnings stand out
      if (l.level == LogLevel::kError) return QBrush(QColor(0xff, 0xeb, 0xee));
      return {};
    case Qt::ForegroundRole:
      if (l.level == LogLevel::kWarning) return QBrush(QColor(0xb2, 0x4c, 0x00));
      if (l.level == LogLevel::kError) return QBrush(QColor(0xc6, 0x28, 0x28));
      return {};
    case kRankRole:
      return l.rank;
    case kLevelRole:
      return int(l.level);
    case kTextRole:
      return l.text;
    default:
      return {};
  }
}

LogFilter::LogFilter(QObject* parent) : QSortFilterProxyModel(parent) {}

void LogFilter::setRank(std::optional<int> rank) {
  if (rank == rank_) return;
  rank_ = rank;
  invalidateFilter();
}

void LogFilter::setLevelShown(LogLevel level, bool shown) {
  if (shown_[int(level)] == shown) return;
  shown_[int(level)] = shown;
  invalidateFilter();
}

void LogFilter::setText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  invalidateFilter();
}

bool LogFilter::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const auto* model = qobject_cast<const LogModel*>(sourceModel());
  if (model == nullptr || source_parent.isValid()) return true;
  const LogLine& l = model->line(source_row);
  if (!shown_[int(l.level)]) return false;
  if (rank_ && l.rank != *rank_) return false;
  if (text_.isEmpty()) return true;
  return l.text.contains(text_, Qt::CaseInsensitive) || l.code.contains(text_, Qt::CaseInsensitive) ||
         (l.rank >= 0 && QStringLiteral("rank %1").arg(l.rank).contains(text_, Qt::CaseInsensitive));
}

}  // namespace fs::ui

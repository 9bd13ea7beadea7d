#include "ui/history/history_table_model.h"

#include <QColor>
#include <QDateTime>
#include <QLocale>

namespace fs::ui {

using app::HistorySort;
using app::RunRecord;

QString formatDuration(qint64 ms) {
  if (ms < 0) return QString();
  const qint64 s = ms / 1000;
  const QString mmss = QStringLiteral("%1:%2")
                           .arg((s / 60) % 60, s >= 3600 ? 2 : 1, 10, QLatin1Char('0'))
                           .arg(s % 60, 2, 10, QLatin1Char('0'));
  return s >= 3600 ? QStringLiteral("%1:%2").arg(s / 3600).arg(mmss) : mmss;
}

QString formatLosses(const QMap<QString, double>& losses) {
  QStringList parts;
  for (auto it = losses.begin(); it != losses.end(); ++it)
    parts << QStringLiteral("%1 %2").arg(it.key(), QString::number(it.value(), 'g', 4));
  return parts.join(QStringLiteral(", "));
}

HistoryTableModel::HistoryTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void HistoryTableModel::setRuns(const QList<RunRecord>& runs) {
  beginResetModel();
  runs_ = runs;
  endResetModel();
}

int HistoryTableModel::rowOf(const QString& runId) const {
  for (int i = 0; i < runs_.size(); ++i)
    if (runs_[i].runId == runId) return i;
  return -1;
}

std::optional<HistorySort> HistoryTableModel::sortFor(int column) {
  switch (column) {
    case kName:
      return HistorySort::kName;
    case kStatus:
      return HistorySort::kStatus;
    case kStarted:
      return HistorySort::kStarted;
    case kDuration:
      return HistorySort::kDuration;
    case kSteps:
      return HistorySort::kSteps;
    case kRunDir:
      return HistorySort::kRunDir;
    default:
      return std::nullopt;
  }
}

int HistoryTableModel::columnFor(HistorySort sort) {
  for (int c = 0; c < kColumnCount; ++c)
    if (sortFor(c) == sort) return c;
  return -1;
}

int HistoryTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int HistoryTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant HistoryTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= runs_.size()) return {};
  const RunRecord& r = runs_[index.row()];
  if (role == kRunIdRole) return r.runId;
  if (role == Qt::ToolTipRole) {
    if (index.column() == kStatus && !r.error.isEmpty()) return r.error;
    const QString where = r.location.isEmpty() ? tr("this machine") : tr("%1 (over SSH)").arg(r.location);
    return tr("run id %1\nhost %2\nconfig %3\nrun directory on %4").arg(r.runId, r.host, r.configHash, where);
  }
  if (role == Qt::ForegroundRole && index.column() == kStatus && r.status == QLatin1String("failed"))
    return QColor(0xb0, 0x20, 0x20);
  if (role == Qt::TextAlignmentRole &&
      (index.column() == kDuration || index.column() == kSteps || index.column() == kRollbacks))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kName:
      return r.name;
    case kStatus:
      return r.status;
    case kStarted:
      return r.startedMs > 0 ? QLocale().toString(QDateTime::fromMSecsSinceEpoch(r.startedMs).toLocalTime(),
                                                  QLocale::ShortFormat)
                             : QString();
    case kDuration:
      return formatDuration(r.durationMs());
    case kSteps:
      return r.totalSteps > 0 ? QStringLiteral("%1 / %2").arg(r.lastStep).arg(r.totalSteps)
                              : QString::number(r.lastStep);
    case kRollbacks:
      return r.rollbacks > 0 ? QString::number(r.rollbacks) : QString();
    case kLosses:
      return formatLosses(r.finalLosses);
    case kRunDir:
      return r.where();  // host:path for a remote run
    default:
      return {};
  }
}

QVariant HistoryTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName:
      return tr("Run");
    case kStatus:
      return tr("Status");
    case kStarted:
      return tr("Started");
    case kDuration:
      return tr("Duration");
    case kSteps:
      return tr("Steps");
    case kRollbacks:
      return tr("Rollbacks");
    case kLosses:
      return tr("Final losses");
    case kRunDir:
      return tr("Run directory");
    default:
      return {};
  }
}

}  // namespace fs::ui

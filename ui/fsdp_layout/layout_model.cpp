#include "ui/fsdp_layout/layout_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <algorithm>

#include "ui/plots/format_units.h"

namespace fs::ui {

LayoutModel::LayoutModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayoutModel::setLayout(const protocol::LayoutEvent& layout) {
  beginResetModel();
  layout_ = layout;
  ranks_ = 0;
  for (const auto& unit : layout_.units) ranks_ = std::max(ranks_, int(unit.shard_bytes.size()));
  gathered_.assign(layout_.units.size(), false);
  endResetModel();
}

int LayoutModel::setGatheredTogether(const std::vector<int>& orders) {
  std::vector<bool> marks(layout_.units.size(), false);
  int unknown = 0;
  for (int order : orders) {
    const auto it = std::find_if(layout_.units.begin(), layout_.units.end(),
                                 [order](const protocol::LayoutUnit& u) { return u.gather_order == order; });
    if (it == layout_.units.end()) {
      ++unknown;
    } else {
      marks[std::size_t(it - layout_.units.begin())] = true;
    }
  }
  if (marks != gathered_) {
    gathered_ = std::move(marks);
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
  }
  return unknown;
}

bool LayoutModel::isGatheredTogether(int row) const {
  return row >= 0 && std::size_t(row) < gathered_.size() && gathered_[std::size_t(row)];
}

int LayoutModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(layout_.units.size());
}

int LayoutModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kFirstRank + ranks_;
}

QVariant LayoutModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section >= kFirstRank)
    return tr("Bytes of each unit held by rank %1").arg(section - kFirstRank);
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case kPath:
      return tr("Module");
    case kParams:
      return tr("Parameters");
    case kDtype:
      return tr("Dtype");
    case kTrainable:
      return tr("Trains");
    case kGatherOrder:
      return tr("Gather order");
    case kPadding:
      return tr("Padding");
    default:
      return tr("Rank %1").arg(section - kFirstRank);
  }
}

QVariant LayoutModel::display(const protocol::LayoutUnit& unit, int column) const {
  switch (column) {
    case kPath:
      return QString::fromStdString(unit.path);
    case kParams:
      return formatCount(unit.param_count);
    case kDtype:
      return QString::fromStdString(unit.dtype);
    case kTrainable:
      if (!unit.trainable) return tr("frozen");
      return unit.frozen_params > 0 ? tr("partly (%1 frozen)").arg(formatCount(unit.frozen_params))
                                    : tr("trainable");
    case kGatherOrder:
      return unit.gather_order;
    case kPadding:
      return unit.padding_elems > 0 ? formatCount(unit.padding_elems) : QString();
    default: {
      const std::size_t rank = std::size_t(column - kFirstRank);
      return rank < unit.shard_bytes.size() ? formatBytes(unit.shard_bytes[rank]) : QString();
    }
  }
}

QVariant LayoutModel::sortKey(const protocol::LayoutUnit& unit, int column) const {
  switch (column) {
    case kPath:
      return QString::fromStdString(unit.path);
    case kParams:
      return qlonglong(unit.param_count);
    case kDtype:
      return QString::fromStdString(unit.dtype);
    case kTrainable:
      // frozen < partly frozen < trainable
      return !unit.trainable ? 0 : unit.frozen_params > 0 ? 1 : 2;
    case kGatherOrder:
      return unit.gather_order;
    case kPadding:
      return qlonglong(unit.padding_elems);
    default: {
      const std::size_t rank = std::size_t(column - kFirstRank);
      return rank < unit.shard_bytes.size() ? qlonglong(unit.shard_bytes[rank]) : qlonglong(-1);
    }
  }
}

QVariant LayoutModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const auto& unit = layout_.units[std::size_t(index.row())];
  const int column = index.column();
  const bool gathered = isGatheredTogether(index.row());
  switch (role) {
    case Qt::DisplayRole:
      return display(unit, column);
    case kSortRole:
      return sortKey(unit, column);
    case Qt::ToolTipRole:
      if (column == kPath && gathered)
        return tr("%1\nGathered together with the other highlighted units at the peak shown above")
            .arg(QString::fromStdString(unit.path));
      if (column == kParams) return tr("%1 parameters").arg(formatInteger(unit.param_count));
      if (column == kPadding) return tr("%1 padding elements").arg(formatInteger(unit.padding_elems));
      if (column >= kFirstRank) {
        const std::size_t rank = std::size_t(column - kFirstRank);
        if (rank < unit.shard_bytes.size()) return tr("%1 bytes").arg(formatInteger(unit.shard_bytes[rank]));
      }
      return display(unit, column);
    case Qt::TextAlignmentRole:
      return column == kPath || column == kDtype || column == kTrainable
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      // Frozen units are context, not what the user tunes: shown quieter.
      if (!unit.trainable) return QBrush(QColor(0x75, 0x75, 0x75));
      return {};
    // The gather window stands out over the alternating rows, and in bold where colour is not seen.
    case Qt::BackgroundRole:
      if (gathered) return QBrush(QColor(0xff, 0xdf, 0x80));
      return {};
    case Qt::FontRole:
      if (gathered) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    case kGatheredRole:
      return gathered;
    default:
      return {};
  }
}

}  // namespace fs::ui

// LayoutModel: the FSDP wrap units of a `layout` event as a table model.
//
// One row per unit, columns: module path, parameters, dtype, trainable
// (trainable / frozen / "partly frozen"), gather order, padding, then one
// "rank N" column of shard bytes per rank (as many as the longest
// shard_bytes). Qt::DisplayRole is human-readable ("1.50 GiB", "12.3 M");
// kSortRole holds the raw number so sorting by size is numeric; the tooltip
// gives exact figures. Frozen units are drawn in grey; units marked with
// setGatheredTogether() (those a rank held at once at its peak) get a
// highlighted background and bold text, and kGatheredRole true.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::ui {

class LayoutModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kPath, kParams, kDtype, kTrainable, kGatherOrder, kPadding, kFirstRank };
  static constexpr int kSortRole = Qt::UserRole + 1;
  static constexpr int kGatheredRole = Qt::UserRole + 2;  // bool: marked by setGatheredTogether()

  explicit LayoutModel(QObject* parent = nullptr);

  // Replaces every row (a new layout event, or a resumed run's).
  void setLayout(const protocol::LayoutEvent& layout);
  const protocol::LayoutEvent& layout() const { return layout_; }
  // Marks the units whose gather_order is in `orders` (a memory event's
  // gathered_at_peak), unmarking the rest; returns how many orders name no
  // unit of the layout. setLayout() unmarks everything.
  int setGatheredTogether(const std::vector<int>& orders);
  bool isGatheredTogether(int row) const;
  int rankCount() const { return ranks_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant display(const protocol::LayoutUnit& unit, int column) const;
  QVariant sortKey(const protocol::LayoutUnit& unit, int column) const;

  protocol::LayoutEvent layout_;
  int ranks_ = 0;
  std::vector<bool> gathered_;  // per row
};

}  // namespace fs::ui

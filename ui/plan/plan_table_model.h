// PlanTableModel: one row per estimate of a plan (engine x policy x
// strategy) with its per-rank figures as human-readable bytes; rows whose
// peak exceeds the device memory are marked (a warning icon and a tint).
//
// Qt::DisplayRole is the formatted text ("1.30 MiB"), kBytesRole the figure
// in bytes (qint64) for sorting and tests, kOverDeviceRole whether the row
// does not fit.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QAbstractTableModel>
#include <cstdint>

#include "app/plan/plan.h"

namespace fs::ui {

class PlanTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    kEngine,
    kPolicy,
    kStrategy,
    kShardGroup,
    kParameters,
    kGradients,
    kOptimizer,
    kGatheredPeak,
    kActivations,
    kActivationsWithoutCkpt,
    kActivationsWithCkpt,
    kPeak,
    kColumnCount
  };
  static constexpr int kBytesRole = Qt::UserRole + 1;
  static constexpr int kOverDeviceRole = Qt::UserRole + 2;

  explicit PlanTableModel(QObject* parent = nullptr);

  void setPlan(const app::Plan& plan);
  void clear();
  void setDeviceMemory(std::int64_t bytes);
  const app::Plan& plan() const { return plan_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  bool overDevice(int row) const;

 private:
  app::Plan plan_;
  std::int64_t device_ = 0;  // 0: no limit
};

}  // namespace fs::ui

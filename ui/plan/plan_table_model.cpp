#include "ui/plan/plan_table_model.h"

#include <QApplication>
#include <QColor>
#include <QStyle>

#include "ui/plan/memory_warnings.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

std::int64_t bytesOf(const app::PlanFigures& f, int column) {
  switch (column) {
    case PlanTableModel::kParameters:
      return f.parameters;
    case PlanTableModel::kGradients:
      return f.gradients;
    case PlanTableModel::kOptimizer:
      return f.optimizer;
    case PlanTableModel::kGatheredPeak:
      return f.gatheredPeak;
    case PlanTableModel::kActivations:
      return f.activations;
    case PlanTableModel::kActivationsWithoutCkpt:
      return f.activationsWithoutCheckpointing;
    case PlanTableModel::kActivationsWithCkpt:
      return f.activationsWithCheckpointing;
    case PlanTableModel::kPeak:
      return f.peak;
    default:
      return 0;
  }
}

}  // namespace

PlanTableModel::PlanTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PlanTableModel::setPlan(const app::Plan& plan) {
  beginResetModel();
  plan_ = plan;
  endResetModel();
}

void PlanTableModel::clear() {
  setPlan({});
}

void PlanTableModel::setDeviceMemory(std::int64_t bytes) {
  device_ = bytes;
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, kColumnCount - 1));
}

int PlanTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(plan_.estimates.size());
}

int PlanTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

bool PlanTableModel::overDevice(int row) const {
  if (device_ <= 0 || row < 0 || row >= rowCount()) return false;
  return !ranksOverDevice(plan_.estimates[static_cast<size_t>(row)], plan_.world, device_).empty();
}

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const app::PlanEstimate& e = plan_.estimates[static_cast<size_t>(index.row())];
  const int column = index.column();
  // The largest rank decides: a bar chart shows the others.
  const auto ranks = app::rankFigures(e, plan_.world);
  app::PlanFigures figures = e.perRank;
  for (const auto& r : ranks) {
    if (r.peak > figures.peak) figures = r;
  }
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case kEngine:
          return e.engine;
        case kPolicy:
          return e.policy;
        case kStrategy:
          return e.strategy;
        case kShardGroup:
          return e.shardGroupSize;
        default:
          return formatBytes(bytesOf(figures, column));
      }
    case kBytesRole:
      if (column < kParameters) return {};
      return QVariant::fromValue<qint64>(bytesOf(figures, column));
    case kOverDeviceRole:
      return overDevice(index.row());
    case Qt::TextAlignmentRole:
      return column >= kShardGroup ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::BackgroundRole:
      return overDevice(index.row()) ? QVariant(QColor(0xfd, 0xec, 0xea)) : QVariant();
    case Qt::DecorationRole:
      if (column == kEngine && overDevice(index.row())) {
        return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
      }
      return {};
    case Qt::ToolTipRole:
      if (column == kPeak && overDevice(index.row())) {
        return tr("The peak of a rank exceeds the device memory (%1)").arg(formatBytes(device_));
      }
      if (column == kActivations) return tr("Per micro-batch, as model.gradient_checkpointing says");
      return {};
    default:
      return {};
  }
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case kEngine:
      return tr("Engine");
    case kPolicy:
      return tr("Policy");
    case kStrategy:
      return tr("Strategy");
    case kShardGroup:
      return tr("Shard group");
    case kParameters:
      return tr("Parameters");
    case kGradients:
      return tr("Gradients");
    case kOptimizer:
      return tr("Optimizer");
    case kGatheredPeak:
      return tr("Gathered peak");
    case kActivations:
      return tr("Activations");
    case kActivationsWithoutCkpt:
      return tr("Act. no ckpt");
    case kActivationsWithCkpt:
      return tr("Act. ckpt");
    case kPeak:
      return tr("Peak");
    default:
      return {};
  }
}

}  // namespace fs::ui

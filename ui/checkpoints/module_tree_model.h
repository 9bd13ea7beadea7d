// ModuleTreeModel: a checkpoint's ModuleTrees (one per section) as a Qt item
// model for the inspector's QTreeView. Top-level rows are the sections
// (model, optimizer, other); below them the module paths, leaves are tensors.
//
// Columns: name, tensors, parameters, bytes, dtype, shape, trainable,
// tied ("same as X"), hash (the manifest's, and what a check found).
// Counts follow ModuleTree: a tied tensor is listed but counted once.
// Qt::UserRole of column 0 holds the row's StatsTarget (a tensor or subtree).
//
// Ownership: shares the CheckpointModel (read-only). Thread-safety: GUI thread.
#pragma once

#include <QAbstractItemModel>
#include <vector>

#include "app/checkpoints/inspector_results.h"

namespace fs::ui {

class ModuleTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column {
    kName,
    kTensors,
    kParameters,
    kBytes,
    kDType,
    kShape,
    kTrainable,
    kTied,
    kHash,
    kColumnCount
  };
  static constexpr int kTargetRole = Qt::UserRole;

  explicit ModuleTreeModel(QObject* parent = nullptr);

  void setCheckpoint(fs::app::CheckpointModelPtr model);
  const fs::app::CheckpointModelPtr& checkpoint() const { return model_; }
  // A hash check's states (per tensor, as CheckpointModel::tensors); empty: none ran.
  void setHashStates(std::vector<fs::inspect::HashState> states);

  // The row of a section's root ("" path) or of a module / tensor path; invalid when none.
  QModelIndex indexOf(fs::inspect::Section section, const QString& path) const;
  fs::app::StatsTarget targetAt(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  // Per node of every tree: its parent and row there, and texts computed once.
  struct NodeInfo {
    std::size_t parent = 0;  // node index in the same tree; the root's is itself
    int row = 0;
    QString dtype;       // a leaf's, one shared by all leaves below, or "mixed"
    int hashDiffer = 0;  // tensors below whose bytes differ from their hash
  };
  static quintptr pack(std::size_t tree, std::size_t node) { return (quintptr(tree) << 40) | node; }
  static std::size_t treeOf(quintptr id) { return id >> 40; }
  static std::size_t nodeOf(quintptr id) { return id & ((quintptr(1) << 40) - 1); }
  const fs::inspect::ModuleNode& node(const QModelIndex& index) const;
  QString dtypeBelow(std::size_t tree, std::size_t node);
  int differBelow(std::size_t tree, std::size_t node);
  QVariant display(const QModelIndex& index) const;

  fs::app::CheckpointModelPtr model_;
  std::vector<std::vector<NodeInfo>> info_;  // per tree, per node
  std::vector<fs::inspect::HashState> hashes_;
};

}  // namespace fs::ui

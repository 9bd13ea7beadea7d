#include "ui/checkpoints/module_tree_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <functional>

#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

QString shapeText(const std::vector<std::int64_t>& shape) {
  QStringList parts;
  for (std::int64_t d : shape) parts << QString::number(d);
  return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

}  // namespace

ModuleTreeModel::ModuleTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void ModuleTreeModel::setCheckpoint(app::CheckpointModelPtr model) {
  beginResetModel();
  model_ = std::move(model);
  hashes_.clear();
  info_.clear();
  if (model_) {
    for (std::size_t t = 0; t < model_->trees.size(); ++t) {
      const inspect::ModuleTree& tree = model_->trees[t].second;
      info_.emplace_back(tree.nodes.size());
      for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
        const auto& children = tree.nodes[n].children;
        for (std::size_t r = 0; r < children.size(); ++r)
          info_[t][children[r]] = {n, static_cast<int>(r), {}, 0};
      }
      dtypeBelow(t, 0);
    }
  }
  endResetModel();
}

void ModuleTreeModel::setHashStates(std::vector<inspect::HashState> states) {
  hashes_ = std::move(states);
  for (std::size_t t = 0; t < info_.size(); ++t) differBelow(t, 0);
  // Every level's hash column: one dataChanged per parent.
  std::function<void(const QModelIndex&)> touch = [&](const QModelIndex& parent) {
    const int rows = rowCount(parent);
    if (rows == 0) return;
    emit dataChanged(index(0, kHash, parent), index(rows - 1, kHash, parent),
                     {Qt::DisplayRole, Qt::ForegroundRole});
    for (int r = 0; r < rows; ++r) touch(index(r, 0, parent));
  };
  touch({});
}

QString ModuleTreeModel::dtypeBelow(std::size_t t, std::size_t n) {
  const inspect::ModuleNode& node = model_->trees[t].second.nodes[n];
  QString dtype;
  if (node.tensor)
    dtype = qs(tensorfile::torchName(model_->tensors[*node.tensor].dtype)).remove(QStringLiteral("torch."));
  for (std::size_t c : node.children) {
    const QString below = dtypeBelow(t, c);
    dtype = dtype.isEmpty() || dtype == below ? below : QStringLiteral("mixed");
  }
  info_[t][n].dtype = dtype;
  return dtype;
}

int ModuleTreeModel::differBelow(std::size_t t, std::size_t n) {
  const inspect::ModuleNode& node = model_->trees[t].second.nodes[n];
  int differ = 0;
  if (node.tensor && *node.tensor < hashes_.size() && hashes_[*node.tensor] == inspect::HashState::kDiffers)
    ++differ;
  for (std::size_t c : node.children) differ += differBelow(t, c);
  info_[t][n].hashDiffer = differ;
  return differ;
}

const inspect::ModuleNode& ModuleTreeModel::node(const QModelIndex& index) const {
  return model_->trees[treeOf(index.internalId())].second.nodes[nodeOf(index.internalId())];
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!model_ || row < 0 || column < 0 || column >= kColumnCount) return {};
  if (!parent.isValid()) {
    if (row >= static_cast<int>(model_->trees.size())) return {};
    return createIndex(row, column, pack(static_cast<std::size_t>(row), 0));
  }
  const auto& children = node(parent).children;
  if (row >= static_cast<int>(children.size())) return {};
  return createIndex(row, column, pack(treeOf(parent.internalId()), children[static_cast<std::size_t>(row)]));
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || !model_) return {};
  const std::size_t t = treeOf(child.internalId()), n = nodeOf(child.internalId());
  if (n == 0) return {};
  const std::size_t p = info_[t][n].parent;
  const int row = p == 0 ? static_cast<int>(t) : info_[t][p].row;
  return createIndex(row, 0, pack(t, p));
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const {
  if (!model_) return 0;
  if (!parent.isValid()) return static_cast<int>(model_->trees.size());
  if (parent.column() != 0) return 0;
  return static_cast<int>(node(parent).children.size());
}

int ModuleTreeModel::columnCount(const QModelIndex&) const {
  return kColumnCount;
}

QModelIndex ModuleTreeModel::indexOf(inspect::Section section, const QString& path) const {
  if (!model_) return {};
  for (std::size_t t = 0; t < model_->trees.size(); ++t) {
    if (model_->trees[t].first != section) continue;
    const inspect::ModuleNode* n = model_->trees[t].second.find(path.toStdString());
    if (!n) return {};
    const std::size_t id = static_cast<std::size_t>(n - model_->trees[t].second.nodes.data());
    return createIndex(id == 0 ? static_cast<int>(t) : info_[t][id].row, 0, pack(t, id));
  }
  return {};
}

app::StatsTarget ModuleTreeModel::targetAt(const QModelIndex& index) const {
  app::StatsTarget target;
  if (!index.isValid() || !model_) return target;
  const inspect::ModuleNode& n = node(index);
  target.section = model_->trees[treeOf(index.internalId())].first;
  if (n.tensor) {
    target.tensor = n.tensor;
  } else {
    target.nodePath = QString::fromStdString(n.path);
  }
  return target;
}

QVariant ModuleTreeModel::display(const QModelIndex& index) const {
  const std::size_t t = treeOf(index.internalId()), id = nodeOf(index.internalId());
  const inspect::ModuleNode& n = node(index);
  const inspect::TensorEntry* tensor = n.tensor ? &model_->tensors[*n.tensor] : nullptr;
  switch (index.column()) {
    case kName:
      return id == 0 ? qs(inspect::sectionName(model_->trees[t].first)) : QString::fromStdString(n.name);
    case kTensors:
      return tensor ? QVariant() : QVariant(formatInteger(static_cast<std::int64_t>(n.tensors)));
    case kParameters:
      return formatCount(n.elements);
    case kBytes:
      return formatBytes(static_cast<std::int64_t>(n.bytes));
    case kDType:
      return info_[t][id].dtype;
    case kShape:
      return tensor ? shapeText(tensor->shape) : QString();
    case kTrainable:
      if (n.bytes == 0) return {};
      if (n.trainableBytes == n.bytes) return tr("trainable");
      if (n.frozenBytes == n.bytes) return tr("frozen");
      if (n.trainableBytes + n.frozenBytes == 0) return {};
      return tr("%1 trainable").arg(formatBytes(static_cast<std::int64_t>(n.trainableBytes)));
    case kTied:
      if (tensor && tensor->sameAs) {
        return tr("same as %1").arg(QString::fromStdString(model_->tensors[*tensor->sameAs].name));
      }
      return n.tied > 0 && !tensor ? tr("%1 tied").arg(n.tied) : QString();
    case kHash:
      if (tensor) {
        if (*n.tensor < hashes_.size()) return qs(inspect::hashStateName(hashes_[*n.tensor]));
        return tensor->manifestHash.empty() ? QString() : tr("recorded");
      }
      return info_[t][id].hashDiffer > 0 ? tr("%1 differ").arg(info_[t][id].hashDiffer) : QString();
    default:
      return {};
  }
}

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !model_) return {};
  switch (role) {
    case Qt::DisplayRole:
      return display(index);
    case Qt::ToolTipRole:
      if (index.column() == kName) {
        const auto& n = node(index);
        return n.tensor ? QString::fromStdString(model_->tensors[*n.tensor].name)
                        : QString::fromStdString(n.path);
      }
      return {};
    case Qt::TextAlignmentRole:
      if (index.column() >= kTensors && index.column() <= kBytes) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      }
      return {};
    case Qt::ForegroundRole:
      if (index.column() == kHash && display(index).toString().contains(QLatin1String("differ"))) {
        return QBrush(QColor(0xb7, 0x1c, 0x1c));
      }
      if (index.column() == kTied && node(index).tensor && model_->tensors[*node(index).tensor].sameAs) {
        return QBrush(QColor(0x75, 0x75, 0x75));
      }
      return {};
    case kTargetRole:
      return QVariant::fromValue(targetAt(index));
    default:
      return {};
  }
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"Name",  "Tensors",   "Parameters", "Bytes", "DType",
                                                   "Shape", "Trainable", "Tied",       "Hash"};
  return section >= 0 && section < kColumnCount ? tr(kNames[section]) : QVariant();
}

}  // namespace fs::ui

#include "ui/checkpoints/diff_view.h"

#include <QBrush>
#include <QColor>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

QString shapeText(const std::vector<std::int64_t>& shape, bool present) {
  if (!present) return QStringLiteral("-");
  QStringList parts;
  for (std::int64_t d : shape) parts << QString::number(d);
  return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

bool compared(const inspect::TensorDiff& d) {
  return d.kind == inspect::DiffKind::kChanged || d.kind == inspect::DiffKind::kUnchanged;
}

}  // namespace

void DiffTableModel::setReport(inspect::DiffReport report) {
  beginResetModel();
  report_ = std::move(report);
  endResetModel();
}

int DiffTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(report_.tensors.size());
}

int DiffTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QString DiffTableModel::rowsText(const inspect::TensorDiff& d) {
  if (d.rows == 0 || !compared(d)) return {};
  if (d.changedRowCount == 0) return QObject::tr("none of %1").arg(d.rows);
  if (d.changedRowCount == d.rows) return QObject::tr("all %1").arg(d.rows);
  QStringList rows;
  for (std::size_t i = 0; i < d.changedRows.size() && i < 8; ++i) rows << QString::number(d.changedRows[i]);
  QString text = rows.join(QStringLiteral(", "));
  if (d.changedRowCount > static_cast<std::int64_t>(rows.size())) {
    text += QObject::tr(" (+%1 more)").arg(d.changedRowCount - rows.size());
  }
  return QObject::tr("%1 of %2: %3").arg(d.changedRowCount).arg(d.rows).arg(text);
}

QVariant DiffTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const inspect::TensorDiff& d = report_.tensors[static_cast<std::size_t>(index.row())];
  const bool pair = compared(d);
  if (role == kSortRole) {
    switch (index.column()) {
      case kMaxAbs:
        return pair ? d.maxAbsChange : -1.0;
      case kRelative:
        return pair ? d.relativeChange : -1.0;
      case kCosine:
        return pair ? d.cosine : 2.0;
      case kChanged:
        return pair ? static_cast<qlonglong>(d.changedElements) : -1LL;
      case kRows:
        return pair ? static_cast<qlonglong>(d.changedRowCount) : -1LL;
      case kTensor:
        return QString::fromStdString(d.name);
      default:
        return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == kKind && d.kind != inspect::DiffKind::kChanged &&
      d.kind != inspect::DiffKind::kUnchanged) {
    return QBrush(QColor(0xb7, 0x1c, 0x1c));
  }
  if (role == Qt::TextAlignmentRole && index.column() >= kMaxAbs && index.column() <= kChanged) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kTensor:
      return QString::fromStdString(d.name);
    case kKind: {
      const auto name = inspect::diffKindName(d.kind);
      return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
    }
    case kMaxAbs:
      return pair ? QString::number(d.maxAbsChange, 'g', 4) : QString();
    case kRelative:
      return pair ? (std::isinf(d.relativeChange) ? QStringLiteral("inf")
                                                  : QString::number(d.relativeChange, 'g', 4))
                  : QString();
    case kCosine:
      return pair ? QString::number(d.cosine, 'g', 8) : QString();
    case kChanged:
      return pair ? formatInteger(d.changedElements) : QString();
    case kRows:
      return rowsText(d);
    case kShapeA:
      return shapeText(d.shapeA, d.kind != inspect::DiffKind::kAdded);
    case kShapeB:
      return shapeText(d.shapeB, d.kind != inspect::DiffKind::kRemoved);
    default:
      return {};
  }
}

QVariant DiffTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[kColumnCount] = {"Tensor",       "Change",  "Max |change|",
                                                   "Relative",     "Cosine",  "Changed",
                                                   "Changed rows", "Shape A", "Shape B"};
  return section >= 0 && section < kColumnCount ? tr(kNames[section]) : QVariant();
}

DiffView::DiffView(QWidget* parent)
    : QWidget(parent),
      open_(new QPushButton(tr("Compare with\u2026"))),
      summary_(new QLabel(tr("Open a second checkpoint to see what changed from this one to it."))),
      table_(new QTableView),
      model_(new DiffTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)) {
  setObjectName(QStringLiteral("diffView"));
  open_->setObjectName(QStringLiteral("compareWith"));
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(DiffTableModel::kSortRole);
  table_->setModel(proxy_);
  table_->setSortingEnabled(false);  // the report's order until a header is clicked
  table_->horizontalHeader()->setSectionsClickable(true);
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideMiddle);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  connect(table_->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int column) {
    table_->setSortingEnabled(true);
    table_->sortByColumn(column, column == DiffTableModel::kTensor || column == DiffTableModel::kCosine
                                     ? Qt::AscendingOrder
                                     : Qt::DescendingOrder);
  });

  auto* top = new QHBoxLayout;
  top->addWidget(open_);
  top->addWidget(summary_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  connect(open_, &QPushButton::clicked, this, &DiffView::openRequested);
}

void DiffView::setResult(const app::DiffResult& result) {
  table_->setSortingEnabled(false);
  proxy_->sort(-1);
  model_->setReport(result.report);
  const auto& r = result.report;
  summary_->setText(tr("%1 \u2192 %2: %3 changed, %4 unchanged, %5 added, %6 removed, %7 mis-shaped")
                        .arg(result.pathA, result.pathB)
                        .arg(r.changed)
                        .arg(r.unchanged)
                        .arg(r.added)
                        .arg(r.removed)
                        .arg(r.misShaped));
  table_->resizeColumnsToContents();
  table_->setColumnWidth(DiffTableModel::kTensor,
                         std::min(table_->columnWidth(DiffTableModel::kTensor), 460));
}

void DiffView::setMessage(const QString& text) {
  summary_->setText(text);
}

}  // namespace fs::ui

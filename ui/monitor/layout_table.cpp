#include "ui/monitor/layout_table.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/monitor/format_units.h"
#include "ui/monitor/layout_model.h"

namespace fs::ui {

LayoutTable::LayoutTable(QWidget* parent)
    : QWidget(parent),
      model_(new LayoutModel(this)),
      sorted_(new QSortFilterProxyModel(this)),
      view_(new QTableView),
      summary_(new QLabel) {
  setObjectName(QStringLiteral("layoutTable"));
  sorted_->setSourceModel(model_);
  sorted_->setSortRole(LayoutModel::kSortRole);
  view_->setModel(sorted_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(LayoutModel::kGatherOrder, Qt::AscendingOrder);  // the order units are used in
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->setVisible(false);
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setStretchLastSection(false);
  summary_->setWordWrap(true);
  summary_->setText(tr("No layout yet: it is reported once the model is wrapped."));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
}

void LayoutTable::setLayout(const protocol::LayoutEvent& layout) {
  model_->setLayout(layout);
  std::int64_t params = 0, trainable = 0;
  std::vector<std::int64_t> per_rank(std::size_t(model_->rankCount()), 0);
  for (const auto& unit : layout.units) {
    params += unit.param_count;
    if (unit.trainable) trainable += unit.param_count - unit.frozen_params;
    for (std::size_t r = 0; r < unit.shard_bytes.size(); ++r) per_rank[r] += unit.shard_bytes[r];
  }
  QString text = tr("%n unit(s), %1 parameters (%2 trainable)", nullptr, int(layout.units.size()))
                     .arg(formatCount(params), formatCount(trainable));
  if (!per_rank.empty()) {
    const auto [lo, hi] = std::minmax_element(per_rank.begin(), per_rank.end());
    const QString least = formatBytes(*lo), most = formatBytes(*hi);
    text += least == most ? tr("; %1 per rank").arg(most) : tr("; %1 to %2 per rank").arg(least, most);
  }
  text += layout.max_units_gathered > 0 ? tr("; at most %1 unit(s) gathered at once").arg(layout.max_units_gathered)
                                        : tr("; no limit on units gathered at once");
  summary_->setText(text);
}

QString LayoutTable::summaryText() const { return summary_->text(); }

}  // namespace fs::ui

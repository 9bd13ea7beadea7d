#include "ui/fsdp_layout/layout_table.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/fsdp_layout/layout_model.h"
#include "ui/plots/format_units.h"

namespace fs::ui {

LayoutTable::LayoutTable(QWidget* parent)
    : QWidget(parent),
      model_(new LayoutModel(this)),
      sorted_(new QSortFilterProxyModel(this)),
      view_(new QTableView),
      summary_(new QLabel),
      peakRank_(new QComboBox),
      peak_(new QLabel) {
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
  peakRank_->setObjectName(QStringLiteral("layoutPeakRank"));
  peakRank_->setToolTip(tr("The rank whose gather window is highlighted"));
  peak_->setWordWrap(true);
  connect(peakRank_, &QComboBox::currentIndexChanged, this, &LayoutTable::refreshPeak);

  auto* peakRow = new QHBoxLayout;
  peakRow->addWidget(new QLabel(tr("Gather window of")));
  peakRow->addWidget(peakRank_);
  peakRow->addWidget(peak_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addLayout(peakRow);
  layout->addWidget(view_, 1);
  refreshPeak();
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
  text += layout.max_units_gathered > 0
              ? tr("; at most %1 unit(s) gathered at once").arg(layout.max_units_gathered)
              : tr("; no limit on units gathered at once");
  summary_->setText(text);
  refreshPeak();  // the new rows are unmarked
}

void LayoutTable::setMemory(const protocol::MemoryEvent& memory) {
  memory_ = memory;
  // The rank choices follow the event's ranks; the chosen rank stays chosen.
  const QVariant chosen = peakRank_->currentData();
  {
    const QSignalBlocker block(peakRank_);
    peakRank_->clear();
    for (const auto& r : memory_.ranks) peakRank_->addItem(tr("rank %1").arg(r.rank), r.rank);
    const int again = chosen.isValid() ? peakRank_->findData(chosen) : -1;
    peakRank_->setCurrentIndex(again >= 0 ? again : (peakRank_->count() > 0 ? 0 : -1));
  }
  refreshPeak();
}

void LayoutTable::showPeakOf(int rank) {
  const int at = peakRank_->findData(rank);
  if (at >= 0) peakRank_->setCurrentIndex(at);
}

void LayoutTable::refreshPeak() {
  peakRank_->setEnabled(peakRank_->count() > 1);
  const QVariant chosen = peakRank_->currentData();
  const auto it = std::find_if(
      memory_.ranks.begin(), memory_.ranks.end(),
      [&](const protocol::RankMemory& r) { return chosen.isValid() && r.rank == chosen.toInt(); });
  if (it == memory_.ranks.end()) {
    model_->setGatheredTogether({});
    peak_->setText(
        tr("No memory report yet: the units a rank gathers together at its peak are highlighted once "
           "one arrives."));
    return;
  }
  const int unknown = model_->setGatheredTogether(it->gathered_at_peak);
  const int rank = it->rank;
  const QString step = formatInteger(memory_.step);
  if (it->gathered_at_peak.empty()) {
    if (!it->gathered_units) {  // written without FSDP: the whole model lives on every rank
      peak_->setText(tr("Nothing highlighted: rank %1 gathers no units (not an FSDP run)").arg(rank));
    } else if (*it->gathered_units > 0) {
      peak_->setText(tr("Rank %1 had %n unit(s) gathered at once by step %2 but does not say which "
                        "(an engine writing event schema 1.1)",
                        nullptr, *it->gathered_units)
                         .arg(rank)
                         .arg(step));
    } else {
      peak_->setText(tr("Nothing highlighted: rank %1 gathered no unit apart from the root (step %2)")
                         .arg(rank)
                         .arg(step));
    }
    return;
  }
  QString text = tr("Highlighted: the %n unit(s) gathered together at rank %1's peak, step %2", nullptr,
                    int(it->gathered_at_peak.size()))
                     .arg(rank)
                     .arg(step);
  if (unknown > 0) text += tr(" (%n of them not in this layout)", nullptr, unknown);
  peak_->setText(text);
}

QString LayoutTable::summaryText() const {
  return summary_->text();
}
QString LayoutTable::peakText() const {
  return peak_->text();
}

}  // namespace fs::ui

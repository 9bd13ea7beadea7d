#include "ui/plots/memory_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

#include "ui/plots/axis_format.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

// One colour per part, and one per rank when a single part is shown.
const QColor kPartColors[kMemoryPartCount] = {QColor(0x37, 0x47, 0x4f), QColor(0x1f, 0x77, 0xb4),
                                              QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd),
                                              QColor(0x2c, 0xa0, 0x2c), QColor(0xff, 0x7f, 0x0e)};
const QColor kRankColors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                              QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                              QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                              QColor(0x17, 0xbe, 0xcf)};

enum TableColumn {
  kRank,
  kStep,
  kRss,
  kPeak,
  kParams,
  kGrads,
  kOptimizer,
  kGathered,
  kActivations,
  kDevice,
  kDevicePeak,
  kDeviceReserved,
  kDeviceReservedPeak,
  kUnits,
  kColumns
};

QTableWidgetItem* bytesItem(std::optional<std::int64_t> bytes) {
  auto* item = new QTableWidgetItem(bytes ? formatBytes(*bytes) : QStringLiteral("-"));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  if (bytes) item->setToolTip(QStringLiteral("%1 bytes").arg(formatInteger(*bytes)));
  return item;
}

}  // namespace

QString memoryPartName(MemoryPart part) {
  switch (part) {
    case MemoryPart::kRss:
      return QStringLiteral("RSS");
    case MemoryPart::kParams:
      return QStringLiteral("parameters");
    case MemoryPart::kGrads:
      return QStringLiteral("gradients");
    case MemoryPart::kOptimizer:
      return QStringLiteral("optimizer state");
    case MemoryPart::kGathered:
      return QStringLiteral("gathered");
    case MemoryPart::kActivations:
      return QStringLiteral("activations");
  }
  return {};
}

QString MemoryView::curveName(int rank, MemoryPart part) {
  return QStringLiteral("rank %1 \u00b7 %2").arg(rank).arg(memoryPartName(part));
}

MemoryView::MemoryView(QWidget* parent)
    : QWidget(parent),
      plot_(new CurvePlot),
      table_(new QTableWidget),
      part_(new QComboBox),
      rank_(new QComboBox) {
  setObjectName(QStringLiteral("memoryView"));
  plot_->setAxisLabels(tr("step"), tr("memory"));
  plot_->setYFormat(AxisFormat::bytes());

  part_->setObjectName(QStringLiteral("memoryPart"));
  for (int p = 0; p < kMemoryPartCount; ++p) part_->addItem(memoryPartName(MemoryPart(p)), p);
  part_->addItem(tr("all parts"), QVariant());
  rank_->setObjectName(QStringLiteral("memoryRank"));
  rank_->addItem(tr("all ranks"), QVariant());
  connect(part_, &QComboBox::currentIndexChanged, this, &MemoryView::updateVisibility);
  connect(rank_, &QComboBox::currentIndexChanged, this, &MemoryView::updateVisibility);

  table_->setColumnCount(kColumns);
  table_->setHorizontalHeaderLabels({tr("Rank"), tr("Step"), tr("RSS"), tr("Peak RSS"), tr("Parameters"),
                                     tr("Gradients"), tr("Optimizer"), tr("Gathered"), tr("Activations"),
                                     tr("Device"), tr("Device peak"), tr("Reserved"), tr("Reserved peak"),
                                     tr("Units gathered")});
  table_->horizontalHeaderItem(kDevice)->setToolTip(tr("Device memory allocated to tensors now"));
  table_->horizontalHeaderItem(kDeviceReserved)
      ->setToolTip(tr("Device memory the caching allocator holds (used or cached) now; its peak since the "
                      "previous report"));
  table_->horizontalHeaderItem(kUnits)->setToolTip(
      tr("FSDP: the most units gathered at once since the previous report; the Layout tab shows which"));
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Show")));
  controls->addWidget(part_);
  controls->addWidget(rank_);
  controls->addStretch(1);
  auto* top = new QWidget;
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(0, 0, 0, 0);
  top_layout->addLayout(controls);
  top_layout->addWidget(plot_, 1);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(top);
  splitter->addWidget(table_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
  part_->setCurrentIndex(int(MemoryPart::kRss));
}

void MemoryView::setSeries(int rank, MemoryPart part, CurveSource source) {
  const QString name = curveName(rank, part);
  series_[{rank, int(part)}] = name;
  plot_->addCurve(name, std::move(source));
  addRankChoice(rank);
  updateVisibility();
}

void MemoryView::clearSeries() {
  series_.clear();
  plot_->clearCurves();
  while (rank_->count() > 1) rank_->removeItem(1);
}

void MemoryView::addRankChoice(int rank) {
  if (rank_->findData(rank) >= 0) return;
  int at = 1;
  while (at < rank_->count() && rank_->itemData(at).toInt() < rank) ++at;
  rank_->insertItem(at, tr("rank %1").arg(rank), rank);
}

void MemoryView::showPart(std::optional<MemoryPart> part) {
  part_->setCurrentIndex(part ? int(*part) : kMemoryPartCount);
}

void MemoryView::showRank(std::optional<int> rank) {
  if (rank) addRankChoice(*rank);
  rank_->setCurrentIndex(rank ? rank_->findData(*rank) : 0);
}

void MemoryView::updateVisibility() {
  const QVariant part = part_->currentData();
  const QVariant rank = rank_->currentData();
  for (const auto& [key, name] : series_) {
    const bool shown =
        (!part.isValid() || part.toInt() == key.second) && (!rank.isValid() || rank.toInt() == key.first);
    plot_->setCurveVisible(name, shown);
    // One part: tell ranks apart. All parts: tell parts apart.
    plot_->setCurveColor(name, part.isValid() ? kRankColors[key.first % int(std::size(kRankColors))]
                                              : kPartColors[key.second]);
  }
  plot_->fitToData();
}

void MemoryView::setLatest(const std::vector<RankMemoryFigures>& ranks) {
  table_->setSortingEnabled(false);
  table_->setRowCount(int(ranks.size()));
  for (int row = 0; row < int(ranks.size()); ++row) {
    const RankMemoryFigures& r = ranks[std::size_t(row)];
    auto* rank = new QTableWidgetItem;
    rank->setData(Qt::DisplayRole, r.rank);
    table_->setItem(row, kRank, rank);
    auto* step = new QTableWidgetItem(formatInteger(r.step));
    step->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, kStep, step);
    table_->setItem(row, kRss, bytesItem(r.rss));
    table_->setItem(row, kPeak, bytesItem(r.peak_rss));
    table_->setItem(row, kParams, bytesItem(r.params));
    table_->setItem(row, kGrads, bytesItem(r.grads));
    table_->setItem(row, kOptimizer, bytesItem(r.optimizer));
    table_->setItem(row, kGathered, bytesItem(r.gathered));
    table_->setItem(row, kActivations, bytesItem(r.activations));
    table_->setItem(row, kDevice, bytesItem(r.device));
    table_->setItem(row, kDevicePeak, bytesItem(r.device_peak));
    table_->setItem(row, kDeviceReserved, bytesItem(r.device_reserved));
    table_->setItem(row, kDeviceReservedPeak, bytesItem(r.device_reserved_peak));
    auto* units =
        new QTableWidgetItem(r.gathered_units ? QString::number(*r.gathered_units) : QStringLiteral("-"));
    units->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(row, kUnits, units);
  }
}

void MemoryView::dataGrew() {
  plot_->dataGrew();
}
void MemoryView::resetData() {
  plot_->resetData();
}

}  // namespace fs::ui

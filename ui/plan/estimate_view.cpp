#include "ui/plan/estimate_view.h"

#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "app/plan/plan_runner.h"
#include "backend/protocol/wire/run_dir.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

QTableWidgetItem* cell(const QString& text, const QVariant& bytes = {}) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  if (bytes.isValid()) {
    item->setData(Qt::UserRole, bytes);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  return item;
}

QTableWidgetItem* bytesCell(const std::optional<std::int64_t>& bytes) {
  if (!bytes) return cell(QStringLiteral("-"));
  return cell(formatBytes(*bytes), QVariant::fromValue<qint64>(*bytes));
}

}  // namespace

EstimateView::EstimateView(QWidget* parent)
    : QWidget(parent),
      runner_(new app::PlanRunner(app::EngineSearch::fromEnvironment(), this)),
      status_(new QLabel(tr("No estimate: follow a run."))),
      table_(new QTableWidget(0, kColumnCount)) {
  setObjectName(QStringLiteral("estimateView"));
  status_->setObjectName(QStringLiteral("estimateStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_->setHorizontalHeaderLabels(
      {tr("Part"), tr("Estimate (per rank)"), tr("Measured, latest"), tr("Measured, peak"), tr("Error")});
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setToolTip(tr("Measured: the largest rank. Error: (estimate - measured peak) / measured peak"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(status_);
  layout->addWidget(table_, 1);
  connect(runner_, &app::PlanRunner::planned, this, &EstimateView::showPlan);
  connect(runner_, &app::PlanRunner::failed, this, [this](const app::PlanError& error) {
    status_->setText(tr("No estimate: %1").arg(error.message));
    emit planFailed(error.message);
  });
}

void EstimateView::setEngineSearch(const app::EngineSearch& search) {
  runner_->setEngineSearch(search);
}

void EstimateView::planRun(const QString& runDir, int world, int nodes) {
  estimate_.reset();
  world_ = world;
  app::PlanRequest request;
  request.configFile = QDir(runDir).filePath(QString::fromLatin1(
      protocol::kConfigFileName.data(), static_cast<qsizetype>(protocol::kConfigFileName.size())));
  request.world = world;
  request.nodes = nodes;
  request.runChoice = true;
  request.reference = true;  // for the live Layout map's reference side (planned())
  status_->setText(tr("Planning world %1 on %2 node(s)\u2026").arg(world).arg(nodes));
  runner_->plan(request);
  refreshTable();
}

void EstimateView::showPlan(const app::Plan& plan) {
  emit planned(plan);
  const auto ours =
      std::find_if(plan.estimates.begin(), plan.estimates.end(),
                   [](const app::PlanEstimate& e) { return e.engine == QLatin1String("ours"); });
  if (ours == plan.estimates.end()) {
    status_->setText(tr("No estimate: the plan has none for this run's strategy and policy"));
    return;
  }
  estimate_ = *ours;
  // single and ddp (parallel.mode ddp) shard nothing: every rank holds the whole model.
  const bool replicated =
      estimate_->strategy == QLatin1String("single") || estimate_->strategy == QLatin1String("ddp");
  status_->setText(tr("Planned: %1 %2, world %3 on %4 node(s)")
                       .arg(estimate_->engine, estimate_->label())
                       .arg(plan.world)
                       .arg(plan.nodes) +
                   (replicated ? tr(", no FSDP: the whole model on every rank")
                               : tr(", shard group of %1").arg(estimate_->shardGroupSize)));
  refreshTable();
}

void EstimateView::setMeasured(const std::vector<app::MeasuredRank>& ranks) {
  if (ranks == measured_) return;
  measured_ = ranks;
  refreshTable();
}

void EstimateView::clear() {
  runner_->cancel();
  estimate_.reset();
  measured_.clear();
  world_ = 0;
  status_->setText(tr("No estimate: follow a run."));
  refreshTable();
}

void EstimateView::refreshTable() {
  table_->setRowCount(0);
  if (!estimate_) return;
  // The rank with the highest planned peak: the one the measured maximum meets.
  app::PlanFigures figures = estimate_->perRank;
  for (const auto& r : app::rankFigures(*estimate_, world_)) {
    if (r.peak > figures.peak) figures = r;
  }
  const auto rows = app::compareEstimate(figures, measured_);
  table_->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const auto& row = rows[static_cast<size_t>(i)];
    table_->setItem(i, kPart, cell(app::comparedPartName(row.part)));
    if (row.part == app::ComparedPart::kPeak) {
      // NOTE [The peak row's measured side] in app/plan/estimate_comparison.h.
      table_->item(i, kPart)->setText(row.stepPeak ? tr("peak (step)") : tr("peak (sum of parts)"));
      const QString estimated =
          tr("Estimate: the planned peak (model state, the step's batches and the step's highest moment).\n");
      table_->item(i, kPart)->setToolTip(
          estimated +
          (row.stepPeak
               ? tr("Measured: the memory events' step_peak, the most live tensor bytes in one step, "
                    "batches and temporaries included: what the planner's peak is held to "
                    "(docs/planner.md, \"Accuracy of the peak\").")
               : tr("Measured: the sum of each part's peak from the memory events; the batches are not among "
                    "them. This run's events carry no step_peak (an engine before telemetry schema 1.3), "
                    "so the two sides are not like for like (docs/planner.md, \"Accuracy of the peak\").")));
    }
    table_->setItem(i, kEstimate, bytesCell(row.estimate));
    table_->setItem(i, kLatest, bytesCell(row.latest));
    table_->setItem(i, kPeak, bytesCell(row.peak));
    if (!row.errorPercent) {
      table_->setItem(i, kError, cell(QStringLiteral("-")));
      continue;
    }
    const QString sign = *row.errorPercent >= 0 ? QStringLiteral("+") : QString();
    table_->setItem(
        i, kError,
        cell(sign + QString::number(*row.errorPercent, 'f', 1) + QStringLiteral(" %"), *row.errorPercent));
  }
}

}  // namespace fs::ui

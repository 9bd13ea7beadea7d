#include "ui/plan/planner_view.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>

#include "app/plan/plan_runner.h"
#include "ui/plan/fit_dialog.h"
#include "ui/plan/layout_map_view.h"
#include "ui/plan/memory_warnings.h"
#include "ui/plan/plan_table_model.h"
#include "ui/plan/rank_bar_chart.h"

namespace fs::ui {
namespace {

constexpr int kDebounceMs = 400;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kDefaultDeviceGiB = 80;  // an A100 / H100

QLabel* bannerLabel(const char* objectName, const QString& style) {
  auto* label = new QLabel;
  label->setObjectName(QLatin1String(objectName));
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->setStyleSheet(style);
  label->setVisible(false);
  return label;
}

}  // namespace

PlannerView::PlannerView(const app::EngineSearch& search, QWidget* parent)
    : QWidget(parent),
      runner_(new app::PlanRunner(search, this)),
      world_(new QSpinBox),
      nodes_(new QSpinBox),
      device_(new QDoubleSpinBox),
      plan_(new QPushButton(tr("Plan"))),
      cancel_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar),
      error_(bannerLabel(
          "plannerError",
          QStringLiteral("background: #fdecea; color: #b71c1c; padding: 6px; border-radius: 3px"))),
      warning_(bannerLabel(
          "plannerWarning",
          QStringLiteral("background: #fff4e5; color: #8a4b00; padding: 6px; border-radius: 3px"))),
      table_(new QTableView),
      model_(new PlanTableModel(this)),
      chart_(new RankBarChart),
      layoutMap_(new LayoutMapView),
      tabs_(new QTabWidget),
      debounce_(new QTimer(this)),
      fitButton_(new QPushButton(tr("Fit to cluster…"))) {
  setObjectName(QStringLiteral("plannerView"));
  world_->setObjectName(QStringLiteral("plannerWorld"));
  world_->setRange(1, 1 << 16);
  nodes_->setObjectName(QStringLiteral("plannerNodes"));
  nodes_->setRange(1, 1 << 12);
  device_->setObjectName(QStringLiteral("plannerDeviceMemory"));
  // Four decimals: CPU runs of the small presets fit in a few MiB.
  device_->setRange(0.0001, 4096);
  device_->setDecimals(4);
  device_->setSuffix(tr(" GiB"));
  device_->setValue(kDefaultDeviceGiB);
  device_->setToolTip(tr("Memory of one device: rows whose peak exceeds it on some rank are marked"));
  progress_->setRange(0, 0);  // busy: the engine reports no progress
  progress_->setMaximumWidth(120);
  progress_->setVisible(false);
  cancel_->setEnabled(false);
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  debounce_->setSingleShot(true);
  debounce_->setInterval(kDebounceMs);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("World:")));
  controls->addWidget(world_);
  controls->addWidget(new QLabel(tr("Nodes:")));
  controls->addWidget(nodes_);
  controls->addWidget(new QLabel(tr("Device memory:")));
  controls->addWidget(device_);
  controls->addStretch(1);
  controls->addWidget(progress_);
  controls->addWidget(plan_);
  controls->addWidget(cancel_);
  fitButton_->setObjectName(QStringLiteral("plannerFit"));
  fitButton_->setToolTip(
      tr("Which strategy, wrap policy, micro-batch, checkpointing, precision and CPU offload "
         "fit a cluster, fastest first (flamingo-train plan --fit)"));
  controls->addWidget(fitButton_);
  auto* splitter = new QSplitter(Qt::Vertical);
  tabs_->setObjectName(QStringLiteral("plannerTabs"));
  tabs_->addTab(chart_, tr("Per-rank memory"));
  tabs_->addTab(layoutMap_, tr("Layout map"));
  splitter->addWidget(table_);
  splitter->addWidget(tabs_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(controls);
  layout->addWidget(error_);
  layout->addWidget(warning_);
  layout->addWidget(splitter, 1);

  connect(world_, &QSpinBox::valueChanged, debounce_, qOverload<>(&QTimer::start));
  connect(nodes_, &QSpinBox::valueChanged, debounce_, qOverload<>(&QTimer::start));
  connect(debounce_, &QTimer::timeout, this, &PlannerView::replan);
  connect(plan_, &QPushButton::clicked, this, &PlannerView::replan);
  connect(fitButton_, &QPushButton::clicked, this, &PlannerView::openFit);
  connect(cancel_, &QPushButton::clicked, runner_, &app::PlanRunner::cancel);
  connect(device_, &QDoubleSpinBox::valueChanged, this, [this] {
    model_->setDeviceMemory(deviceMemory());
    chart_->setDeviceMemory(deviceMemory());
    updateWarnings();
  });
  connect(runner_, &app::PlanRunner::runningChanged, this, &PlannerView::showRunning);
  connect(runner_, &app::PlanRunner::planned, this, &PlannerView::showPlan);
  connect(runner_, &app::PlanRunner::failed, this, &PlannerView::showError);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          &PlannerView::showSelected);
  model_->setDeviceMemory(deviceMemory());
  chart_->setDeviceMemory(deviceMemory());
}

std::int64_t PlannerView::deviceMemory() const {
  return std::llround(device_->value() * kGiB);
}

void PlannerView::setConfig(const protocol::RunConfig& config) {
  const bool topologyChanged = !config_ || config_->launch.nnodes != config.launch.nnodes ||
                               config_->launch.nproc_per_node != config.launch.nproc_per_node;
  config_ = config;
  if (fit_) fit_->setConfig(config);
  if (topologyChanged) {
    const QSignalBlocker blockWorld(world_), blockNodes(nodes_);
    world_->setValue(static_cast<int>(std::max<std::int64_t>(1, config.worldSize())));
    nodes_->setValue(static_cast<int>(std::max<std::int64_t>(1, config.launch.nnodes)));
  }
  debounce_->start();
}

void PlannerView::replan() {
  debounce_->stop();
  if (!config_) return;
  app::PlanRequest request;
  request.config = config_;
  request.world = world_->value();
  request.nodes = nodes_->value();
  runner_->plan(request);
}

void PlannerView::showRunning(bool running) {
  progress_->setVisible(running);
  cancel_->setEnabled(running);
  if (running) error_->setVisible(false);
}

void PlannerView::showPlan(const app::Plan& plan) {
  const int keep = table_->currentIndex().isValid() ? table_->currentIndex().row() : 0;
  model_->setPlan(plan);
  updateWarnings();
  if (model_->rowCount() > 0) table_->selectRow(std::min(keep, model_->rowCount() - 1));
  showSelected();
}

void PlannerView::showError(const app::PlanError& error) {
  model_->clear();
  chart_->clear();
  layoutMap_->clear();
  warning_->setVisible(false);
  error_->setText(error.message);
  error_->setVisible(true);
}

void PlannerView::showSelected() {
  const int row = table_->currentIndex().row();
  const auto& estimates = model_->plan().estimates;
  if (row < 0 || row >= static_cast<int>(estimates.size())) {
    chart_->clear();
    layoutMap_->clear();
    return;
  }
  const app::PlanEstimate& e = estimates[static_cast<size_t>(row)];
  chart_->setRanks(app::rankFigures(e, model_->plan().world), e.label());
  layoutMap_->setPlan(model_->plan(), row);
}

void PlannerView::updateWarnings() {
  const QStringList lines = memoryWarnings(model_->plan(), deviceMemory());
  warning_->setText(lines.join(QLatin1Char('\n')));
  warning_->setVisible(!lines.isEmpty());
}

void PlannerView::openFit() {
  if (!fit_) {
    fit_ = new FitDialog(runner_->engineSearch(), this);
    connect(fit_, &FitDialog::applyRequested, this, &PlannerView::applyFit);
  }
  if (config_) fit_->setConfig(*config_);
  fit_->show();
  fit_->raise();
}

}  // namespace fs::ui

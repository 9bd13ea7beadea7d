#include "ui/monitor/monitor_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "app/control/control_client.h"
#include "app/monitor/run_attempts.h"
#include "app/plan/estimate_comparison.h"
#include "ui/checkpoints/run_checkpoint_list.h"
#include "ui/control/run_control_bar.h"
#include "ui/fsdp_layout/layout_table.h"
#include "ui/logs/log_view.h"
#include "ui/monitor/heartbeat_table.h"
#include "ui/monitor/rollback_marks.h"
#include "ui/monitor/rollback_table.h"
#include "ui/monitor/series_router.h"
#include "ui/plan/estimate_view.h"
#include "ui/plan/layout_map_view.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/memory_view.h"
#include "ui/status/run_status_bar.h"

// NOTE [Monitor page layout]
//   [run directory] [status: state, step / total, samples/s, ETA] [control buttons]
//   [x axis: step | samples | tokens | wall time | relative time] [smoothing] [ranks]
//   [alert banner: stalled run, dead process, broken telemetry]
//   tabs: Training (loss, lr, grad norm, throughput; the rollbacks' table under them
//   once there is one) | Gates | Timing | Memory | Estimate | Layout | Layout map |
//   Ranks (the heartbeat board) | Logs | Checkpoints (the run's checkpoint events;
//   double-click: inspectCheckpoint)
//
// Rollbacks: a marker per rollback on the loss plot at the spike (rollback_marks.h),
// the abandoned steps dimmed (SeriesRouter), and a row each in the RollbackTable.
//
// Estimate: the planner's figures for the run's config, world and nodes beside
// the measured memory (EstimateView), planned when run_started arrives.
// Layout: the units, with the gather window of the latest memory event's
// chosen rank highlighted (LayoutTable). Layout map: the same event laid over
// the Estimate tab's plan of the run's config.yaml, as a treemap of the units
// beside the reference's (LayoutMapView; the plan names the parameters, the
// event gives each rank's shard bytes, disagreements are outlined).
//
// Alerts also leave through alert() so the window can raise a desktop
// notification. The page reads nothing itself: the monitor's follower does.

namespace fs::ui {
namespace {

std::int64_t nowMs() {
  return QDateTime::currentMSecsSinceEpoch();
}

// spdlog's "[rank 0] [warning] text" lines of logs/rank-<r>.log.
LogLine fromRankLog(const app::RankLogLine& in) {
  LogLine line;
  line.rank = in.rank;
  line.text = in.text;
  if (in.text.contains(QLatin1String("] [warning] "))) line.level = LogLevel::kWarning;
  if (in.text.contains(QLatin1String("] [error] ")) || in.text.contains(QLatin1String("] [critical] "))) {
    line.level = LogLevel::kError;
  }
  return line;
}

struct SmoothingChoice {
  const char* label;
  Smoothing smoothing;
};
const SmoothingChoice kSmoothing[] = {
    {"No smoothing", {SmoothingKind::kNone, 0}},
    {"EMA 0.6 (TensorBoard)", {SmoothingKind::kEma, 0.6}},
    {"EMA 0.9 (TensorBoard)", {SmoothingKind::kEma, 0.9}},
    {"EMA 0.99 (TensorBoard)", {SmoothingKind::kEma, 0.99}},
    {"Time-weighted EMA, half-life 20", {SmoothingKind::kTimeEma, 20}},
    {"Running mean, 10 points", {SmoothingKind::kRunningMean, 10}},
    {"Running mean, 100 points", {SmoothingKind::kRunningMean, 100}},
};

}  // namespace

MonitorPage::MonitorPage(app::RunMonitor* monitor, app::ControlClient* control, QWidget* parent)
    : QWidget(parent),
      monitor_(monitor),
      control_(control),
      runDir_(new QLabel(tr("No run followed: launch one, or open a run directory."))),
      status_(new RunStatusBar),
      controls_(new RunControlBar(control)),
      xAxis_(new QComboBox),
      smoothing_(new QComboBox),
      ranks_(new QCheckBox(tr("Per-rank losses"))),
      banner_(new QLabel),
      tabs_(new QTabWidget),
      loss_(new CurvePlot),
      lr_(new CurvePlot),
      gradNorm_(new CurvePlot),
      throughput_(new CurvePlot),
      timing_(new CurvePlot),
      gates_(new CurvePlot),
      memory_(new MemoryView),
      estimate_(new EstimateView),
      layout_(new LayoutTable),
      layoutMap_(new LayoutMapView),
      logs_(new LogView),
      checkpoints_(new RunCheckpointList),
      rollbacks_(new RollbackTable),
      heartbeats_(new HeartbeatTable),
      heartbeatSummary_(new QLabel) {
  setObjectName(QStringLiteral("monitorPage"));
  runDir_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  for (const auto& choice : kSmoothing) smoothing_->addItem(tr(choice.label));
  banner_->setVisible(false);
  banner_->setWordWrap(true);
  banner_->setStyleSheet(
      QStringLiteral("background: #fdecea; color: #b71c1c; padding: 6px; border-radius: 3px"));

  auto* top = new QHBoxLayout;
  top->addWidget(runDir_, 1);
  attempt_ = new QLabel;
  attempt_->setObjectName(QStringLiteral("runAttempt"));
  attempt_->setVisible(false);
  top->addWidget(attempt_);
  top->addWidget(status_);
  auto* row = new QHBoxLayout;
  row->addWidget(controls_);
  row->addStretch(1);
  row->addWidget(new QLabel(tr("X axis:")));
  row->addWidget(xAxis_);
  row->addWidget(smoothing_);
  row->addWidget(ranks_);

  tabs_->addTab(buildTrainingTab(), tr("Training"));
  tabs_->addTab(gates_, tr("Gates"));
  tabs_->addTab(timing_, tr("Timing"));
  tabs_->addTab(memory_, tr("Memory"));
  tabs_->addTab(estimate_, tr("Estimate"));
  tabs_->addTab(layout_, tr("Layout"));
  tabs_->addTab(layoutMap_, tr("Layout map"));
  tabs_->addTab(buildRanksTab(), tr("Ranks"));
  tabs_->addTab(logs_, tr("Logs"));
  tabs_->addTab(checkpoints_, tr("Checkpoints"));

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(row);
  layout->addWidget(banner_);
  layout->addWidget(tabs_, 1);

  router_ = new SeriesRouter(monitor_->store(),
                             RunPlots{loss_, lr_, gradNorm_, throughput_, timing_, gates_, memory_}, this);
  refreshAxisChoices();
  connect(xAxis_, &QComboBox::currentIndexChanged, this, &MonitorPage::applyAxisChoice);
  connect(smoothing_, &QComboBox::currentIndexChanged, this, &MonitorPage::applySmoothingChoice);
  connect(ranks_, &QCheckBox::toggled, router_, &SeriesRouter::setShowRanks);
  wireMonitor();
}

QWidget* MonitorPage::buildTrainingTab() {
  auto* page = new QWidget;
  auto* grid = new QGridLayout(page);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->addWidget(loss_, 0, 0);
  grid->addWidget(lr_, 0, 1);
  grid->addWidget(gradNorm_, 1, 0);
  grid->addWidget(throughput_, 1, 1);
  grid->addWidget(rollbacks_, 2, 0, 1, 2);
  grid->setRowStretch(0, 3);
  grid->setRowStretch(1, 2);
  rollbacks_->setMaximumHeight(130);
  rollbacks_->setVisible(false);
  return page;
}

QWidget* MonitorPage::buildRanksTab() {
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  heartbeatSummary_->setText(HeartbeatTable::summary({}));
  heartbeatSummary_->setWordWrap(true);
  layout->addWidget(heartbeatSummary_);
  layout->addWidget(heartbeats_, 1);
  return page;
}

void MonitorPage::refreshRollbacks() {
  rollbacks_->clearRollbacks();
  for (const auto& r : monitor_->rollbacks()) rollbacks_->addRollback(r.event);
  rollbacks_->setVisible(rollbacks_->rowCount() > 0);
  refreshRollbackMarkers();
}

void MonitorPage::refreshRollbackMarkers() {
  loss_->setMarkers(rollbackMarkers(*monitor_->store(), monitor_->rollbacks(), router_->xAxis()));
}

void MonitorPage::wireMonitor() {
  connect(monitor_, &app::RunMonitor::checkpointAdded, checkpoints_, &RunCheckpointList::add);
  connect(monitor_, &app::RunMonitor::rollbackAdded, this, [this](const protocol::RollbackEvent& r) {
    rollbacks_->addRollback(r);
    rollbacks_->setVisible(true);
    refreshRollbackMarkers();
  });
  // A rewind brings the abandoned points a marker on a samples / tokens axis sits on.
  connect(monitor_->store(), &app::SeriesStore::reset, this, &MonitorPage::refreshRollbackMarkers);
  connect(monitor_, &app::RunMonitor::heartbeatsChanged, this, [this] {
    heartbeats_->setBoard(monitor_->heartbeats());
    heartbeatSummary_->setText(heartbeats_->summaryText());
  });
  connect(checkpoints_, &RunCheckpointList::inspectRequested, this, &MonitorPage::inspectCheckpoint);
  connect(monitor_, &app::RunMonitor::statusChanged, this, &MonitorPage::refreshStatus);
  connect(monitor_, &app::RunMonitor::runStarted, this, &MonitorPage::refreshAxisChoices);
  connect(monitor_, &app::RunMonitor::runStarted, this, [this](const protocol::RunStartedEvent& e) {
    estimate_->planRun(monitor_->runDir(), e.world_size, std::max(1, e.nnodes));
  });
  connect(estimate_, &EstimateView::planned, layoutMap_, &LayoutMapView::setLivePlan);
  connect(estimate_, &EstimateView::planFailed, layoutMap_, &LayoutMapView::setLivePlanError);
  connect(monitor_, &app::RunMonitor::delivered, this,
          [this] { estimate_->setMeasured(monitor_->measuredMemory()); });
  connect(monitor_, &app::RunMonitor::layoutChanged, this, [this] {
    if (!monitor_->layout()) return;
    layout_->setLayout(*monitor_->layout());
    layoutMap_->setLiveLayout(*monitor_->layout());
  });
  connect(monitor_, &app::RunMonitor::memoryReported, this, [this] {
    if (monitor_->latestMemory()) layout_->setMemory(*monitor_->latestMemory());
  });
  connect(monitor_, &app::RunMonitor::logLines, this, [this](const QList<app::RankLogLine>& lines) {
    std::vector<LogLine> out;
    out.reserve(static_cast<size_t>(lines.size()));
    for (const auto& l : lines) out.push_back(fromRankLog(l));
    logs_->appendLines(std::move(out));
  });
  connect(monitor_, &app::RunMonitor::warningAdded, this,
          [this](const protocol::WarningEvent& w) { logs_->appendLine(logLineFrom(w, nowMs())); });
  connect(monitor_, &app::RunMonitor::errorReported, this, [this](const protocol::ErrorEvent& e) {
    logs_->appendLine(logLineFrom(e, nowMs()));
    showAlert(tr("The run reported an error"), QString::fromStdString(e.message));
  });
  // Acks and states go to the control client directly (same thread), so the
  // buttons follow the engine.
  connect(monitor_, &app::RunMonitor::controlAcknowledged, control_, &app::ControlClient::onAck);
  connect(monitor_, &app::RunMonitor::stalled, this, [this](const QString& why) {
    refreshStatus();
    showAlert(tr("The run looks stalled"), why);
  });
  connect(monitor_, &app::RunMonitor::recovered, this, [this] {
    refreshStatus();
    banner_->setVisible(false);
  });
  connect(monitor_, &app::RunMonitor::processDied, this,
          [this](const QString& why) { showAlert(tr("The training process is gone"), why); });
  connect(monitor_, &app::RunMonitor::issue, this, [this](const app::FollowIssue& issue) {
    LogLine line;
    line.time_ms = nowMs();
    line.level = LogLevel::kWarning;
    line.code = QStringLiteral("telemetry");
    line.text = issue.message;
    logs_->appendLine(line);
  });
}

void MonitorPage::runAttached(const QString& runDir) {
  runDir_->setText(runDir);
  runDir_->setToolTip(runDir);
  logs_->clear();
  checkpoints_->reset(runDir);
  for (const auto& c : monitor_->checkpoints()) checkpoints_->add(c);
  refreshRollbacks();
  heartbeats_->setBoard(monitor_->heartbeats());
  heartbeatSummary_->setText(heartbeats_->summaryText());
  layout_->setLayout(protocol::LayoutEvent{});
  layout_->setMemory(protocol::MemoryEvent{});
  layoutMap_->clear();
  estimate_->clear();
  banner_->setVisible(false);
  refreshStatus();
}

RunStatus MonitorPage::displayStatus(const app::RunStatus& s, bool stalled) {
  RunStatus out;
  out.step = s.step;
  out.total_steps = s.total_steps;
  if (s.last_step_ms) out.samples_per_s = s.samples_per_s;
  out.eta_s = s.eta_s;
  using protocol::RunState;
  switch (s.state.value_or(RunState::kStarting)) {
    case RunState::kStarting:
      out.state = MonitorState::kStarting;
      break;
    case RunState::kRunning:
      out.state = MonitorState::kRunning;
      break;
    case RunState::kPaused:
      out.state = MonitorState::kPaused;
      break;
    case RunState::kStopping:
      out.state = MonitorState::kStopping;
      break;
    case RunState::kFinished:
      out.state = MonitorState::kFinished;
      break;
    case RunState::kFailed:
      out.state = MonitorState::kFailed;
      break;
  }
  if (stalled && out.state == MonitorState::kRunning) out.state = MonitorState::kStalled;
  return out;
}

void MonitorPage::refreshStatus() {
  const auto& s = monitor_->status();
  status_->setStatus(displayStatus(s, monitor_->isStalled()));
  attempt_->setText(app::attemptLine(s.attempts));
  attempt_->setVisible(!attempt_->text().isEmpty());
  if (s.state) control_->setRunState(*s.state);
}

void MonitorPage::refreshAxisChoices() {
  const QSignalBlocker block(xAxis_);
  const int keep = xAxis_->currentIndex();
  xAxis_->clear();
  auto add = [&](const app::XAxis& axis) {
    xAxis_->addItem(SeriesRouter::axisLabel(axis),
                    QVariant::fromValue(QStringList{QString::number(static_cast<int>(axis.kind)),
                                                    QString::fromStdString(axis.dataset)}));
  };
  add({app::XKind::kStep, {}});
  add({app::XKind::kSamples, {}});
  add({app::XKind::kTokens, {}});
  std::vector<std::string> datasets;
  if (monitor_->status().started) datasets = monitor_->status().started->datasets;
  for (const auto& ds : datasets) add({app::XKind::kSamples, ds});
  for (const auto& ds : datasets) add({app::XKind::kTokens, ds});
  add({app::XKind::kWallTime, {}});
  add({app::XKind::kRelativeTime, {}});
  xAxis_->setCurrentIndex(keep >= 0 && keep < xAxis_->count() ? keep : 0);
}

void MonitorPage::applyAxisChoice() {
  const QStringList data = xAxis_->currentData().toStringList();
  if (data.size() != 2) return;
  router_->setXAxis(app::XAxis{static_cast<app::XKind>(data[0].toInt()), data[1].toStdString()});
  refreshRollbackMarkers();
}

void MonitorPage::applySmoothingChoice() {
  const int i = smoothing_->currentIndex();
  if (i >= 0 && i < static_cast<int>(std::size(kSmoothing))) router_->setSmoothing(kSmoothing[i].smoothing);
}

void MonitorPage::showAlert(const QString& title, const QString& message) {
  banner_->setText(QStringLiteral("<b>%1</b> %2").arg(title.toHtmlEscaped(), message.toHtmlEscaped()));
  banner_->setVisible(true);
  emit alert(title, message);
}

QString MonitorPage::alertText() const {
  return banner_->isVisible() ? banner_->text() : QString();
}

}  // namespace fs::ui

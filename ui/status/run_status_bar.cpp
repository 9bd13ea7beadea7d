#include "ui/status/run_status_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <cmath>

#include "ui/plots/format_units.h"

namespace fs::ui {

QString stateText(MonitorState state) {
  switch (state) {
    case MonitorState::kStarting:
      return QStringLiteral("starting");
    case MonitorState::kRunning:
      return QStringLiteral("running");
    case MonitorState::kPaused:
      return QStringLiteral("paused");
    case MonitorState::kStalled:
      return QStringLiteral("stalled");
    case MonitorState::kStopping:
      return QStringLiteral("stopping");
    case MonitorState::kFinished:
      return QStringLiteral("finished");
    case MonitorState::kFailed:
      return QStringLiteral("failed");
  }
  return {};
}

QString stateColor(MonitorState state) {
  switch (state) {
    case MonitorState::kStarting:
    case MonitorState::kStopping:
      return QStringLiteral("#1565c0");  // blue: in transition
    case MonitorState::kRunning:
      return QStringLiteral("#2e7d32");  // green
    case MonitorState::kPaused:
      return QStringLiteral("#757575");  // grey
    case MonitorState::kStalled:
      return QStringLiteral("#ef6c00");  // orange: look at it
    case MonitorState::kFinished:
      return QStringLiteral("#37474f");
    case MonitorState::kFailed:
      return QStringLiteral("#c62828");  // red
  }
  return {};
}

RunStatusBar::RunStatusBar(QWidget* parent)
    : QWidget(parent), state_(new QLabel), step_(new QLabel), rate_(new QLabel), eta_(new QLabel) {
  setObjectName(QStringLiteral("runStatusBar"));
  state_->setObjectName(QStringLiteral("runState"));
  step_->setObjectName(QStringLiteral("runStep"));
  rate_->setObjectName(QStringLiteral("runRate"));
  eta_->setObjectName(QStringLiteral("runEta"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->setSpacing(16);
  for (QLabel* label : {state_, step_, rate_, eta_}) layout->addWidget(label);
  layout->addStretch(1);
  setStatus(RunStatus{});
}

void RunStatusBar::setStatus(const RunStatus& status) {
  status_ = status;
  state_->setText(stateLabelText());
  state_->setStyleSheet(
      QStringLiteral("QLabel { color: white; background: %1; border-radius: 3px; padding: 1px 6px; "
                     "font-weight: bold; }")
          .arg(stateColor(status.state)));
  step_->setText(stepText());
  rate_->setText(rateText());
  eta_->setText(etaText());
}

QString RunStatusBar::stepText() const {
  if (status_.total_steps <= 0) return tr("Step %1").arg(formatInteger(status_.step));
  const double percent = 100.0 * double(status_.step) / double(status_.total_steps);
  return tr("Step %1 / %2 (%3%)")
      .arg(formatInteger(status_.step), formatInteger(status_.total_steps), QString::number(percent, 'f', 1));
}

QString RunStatusBar::rateText() const {
  if (!status_.samples_per_s || !std::isfinite(*status_.samples_per_s)) return tr("- samples/s");
  const double r = *status_.samples_per_s;
  return tr("%1 samples/s").arg(QString::number(r, 'f', r < 10 ? 2 : r < 100 ? 1 : 0));
}

QString RunStatusBar::etaText() const {
  const bool done = status_.state == MonitorState::kFinished || status_.state == MonitorState::kFailed;
  if (done || !status_.eta_s) return tr("ETA -");
  return tr("ETA %1").arg(formatDuration(*status_.eta_s));
}

QString RunStatusBar::stateLabelText() const {
  return stateText(status_.state);
}

QString RunStatusBar::text() const {
  return QStringList{stateLabelText(), stepText(), rateText(), etaText()}.join(QStringLiteral(" \u00b7 "));
}

}  // namespace fs::ui

#include "ui/plan/fit_dialog.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/plan/plan_request.h"
#include "app/plan/plan_runner.h"
#include "ui/plots/format_units.h"

namespace fs::ui {
namespace {

enum Column { kRank, kChoice, kStep, kNeeds, kMargin, kWhy, kColumns };

// The model's step time: tiny presets model microseconds, so not formatDuration's h:mm:ss.
QString stepText(double seconds) {
  if (seconds >= 1) return QStringLiteral("%1 s").arg(seconds, 0, 'g', 3);
  if (seconds >= 1e-3) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'g', 3);
  return QStringLiteral("%1 µs").arg(seconds * 1e6, 0, 'g', 3);
}

QLabel* banner(const char* name, const QString& style) {
  auto* label = new QLabel;
  label->setObjectName(QLatin1String(name));
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->setStyleSheet(style);
  label->setVisible(false);
  return label;
}

QString figureLabel(const QString& flag) {
  static const QMap<QString, QString> labels = {
      {QStringLiteral("nodes"), QObject::tr("Nodes")},
      {QStringLiteral("gpus-per-node"), QObject::tr("GPUs per node")},
      {QStringLiteral("memory-gib"), QObject::tr("Memory per GPU (GiB)")},
      {QStringLiteral("host-memory-gib"), QObject::tr("Host memory per node (GiB)")},
      {QStringLiteral("intra-node-gbs"), QObject::tr("Within a node (GB/s)")},
      {QStringLiteral("inter-node-gbs"), QObject::tr("Between nodes (GB/s)")},
      {QStringLiteral("host-gbs"), QObject::tr("GPU to host (GB/s)")},
      {QStringLiteral("peak-tflops-fp32"), QObject::tr("Peak FP32 (TFLOP/s)")},
      {QStringLiteral("peak-tflops-16"), QObject::tr("Peak BF16/FP16 (TFLOP/s)")},
      {QStringLiteral("efficiency"), QObject::tr("Efficiency (share of peak)")}};
  return labels.value(flag, flag);
}

}  // namespace

FitDialog::FitDialog(const app::EngineSearch& search, QWidget* parent)
    : QDialog(parent),
      runner_(new app::PlanRunner(search, this)),
      gpu_(new QComboBox),
      fit_(new QPushButton(tr("Fit"))),
      cancel_(new QPushButton(tr("Cancel"))),
      apply_(new QPushButton(tr("Apply to config"))),
      progress_(new QProgressBar),
      error_(banner("fitError",
                    QStringLiteral("background: #fdecea; color: #b71c1c; padding: 6px; border-radius: 3px"))),
      status_(banner("fitStatus", QStringLiteral("padding: 4px"))),
      table_(new QTableWidget(0, kColumns)) {
  setObjectName(QStringLiteral("fitDialog"));
  setWindowTitle(tr("Fit to cluster"));
  gpu_->setObjectName(QStringLiteral("fitGpu"));
  gpu_->addItems(app::fitGpuNames());
  gpu_->setCurrentText(QStringLiteral("H100-SXM-80GB"));
  auto* form = new QFormLayout;
  form->addRow(tr("GPU (catalog)"), gpu_);
  for (const auto& flag : app::fitFigureFlags()) {
    auto* edit = new QLineEdit;
    edit->setObjectName(QStringLiteral("fit_") + flag);
    edit->setPlaceholderText(flag == QStringLiteral("nodes") ? tr("empty: 1 node")
                                                             : tr("empty: the GPU's catalog figure"));
    figures_.insert(flag, edit);
    form->addRow(figureLabel(flag), edit);
  }
  fit_->setObjectName(QStringLiteral("fitRun"));
  cancel_->setObjectName(QStringLiteral("fitCancel"));
  cancel_->setEnabled(false);
  apply_->setObjectName(QStringLiteral("fitApply"));
  apply_->setEnabled(false);
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(120);
  progress_->setVisible(false);
  table_->setObjectName(QStringLiteral("fitTable"));
  table_->setHorizontalHeaderLabels(
      {tr("Rank"), tr("Choice"), tr("Step (model)"), tr("Needs per GPU"), tr("Margin"), tr("Why")});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(progress_);
  buttons->addStretch(1);
  buttons->addWidget(fit_);
  buttons->addWidget(cancel_);
  auto* bottom = new QHBoxLayout;
  bottom->addStretch(1);
  bottom->addWidget(apply_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(error_);
  layout->addWidget(status_);
  layout->addWidget(table_, 1);
  layout->addLayout(bottom);
  resize(1000, 700);

  connect(fit_, &QPushButton::clicked, this, &FitDialog::fit);
  connect(cancel_, &QPushButton::clicked, runner_, &app::PlanRunner::cancel);
  connect(apply_, &QPushButton::clicked, this, &FitDialog::applySelected);
  connect(runner_, &app::PlanRunner::runningChanged, this, [this](bool running) {
    progress_->setVisible(running);
    cancel_->setEnabled(running);
    fit_->setEnabled(!running);
  });
  connect(runner_, &app::PlanRunner::fitted, this, &FitDialog::showFit);
  connect(runner_, &app::PlanRunner::failed, this, &FitDialog::showError);
  connect(table_, &QTableWidget::currentCellChanged, this,
          [this](int row) { apply_->setEnabled(row >= 0 && row < result_.ranked.size()); });
}

void FitDialog::setConfig(const protocol::RunConfig& config) {
  config_ = config;
}

app::FitCluster FitDialog::cluster() const {
  app::FitCluster c;
  c.gpu = gpu_->currentText();
  for (auto it = figures_.begin(); it != figures_.end(); ++it) {
    const QString v = it.value()->text().trimmed();
    if (!v.isEmpty()) c.figures.insert(it.key(), v);
  }
  return c;
}

void FitDialog::fit() {
  if (!config_) return;
  app::PlanRequest request;
  request.config = config_;
  request.fit = cluster();
  error_->setVisible(false);
  runner_->plan(request);
}

void FitDialog::showFit(const app::FitResult& fit) {
  result_ = fit;
  error_->setVisible(false);
  table_->setRowCount(0);
  table_->setRowCount(int(fit.ranked.size() + fit.misfits.size()));
  int row = 0;
  auto put = [this](int r, int column, const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(text);
    table_->setItem(r, column, item);
  };
  for (const auto& c : fit.ranked) {
    put(row, kRank, QString::number(row + 1));
    put(row, kChoice, c.label());
    put(row, kStep, stepText(c.stepSeconds));
    put(row, kNeeds, formatBytes(c.deviceBytes));
    put(row, kMargin, formatBytes(c.marginBytes));
    put(row, kWhy, c.reason);
    ++row;
  }
  for (const auto& c : fit.misfits) {
    put(row, kRank, tr("does not fit"));
    put(row, kChoice, c.label());
    put(row, kStep, stepText(c.stepSeconds));
    put(row, kNeeds, formatBytes(c.deviceBytes));
    put(row, kMargin, formatBytes(c.marginBytes));
    put(row, kWhy, c.exceeds.join(QStringLiteral("; ")));
    for (int column = 0; column < kColumns; ++column) table_->item(row, column)->setForeground(Qt::gray);
    ++row;
  }
  status_->setText(fit.ranked.isEmpty() ? (fit.refusal.isEmpty() ? tr("Nothing fits.") : fit.refusal)
                                        : tr("%1 choices fit, %2 do not; the fastest first.")
                                              .arg(fit.ranked.size())
                                              .arg(fit.misfits.size()));
  status_->setVisible(true);
  if (!fit.ranked.isEmpty()) table_->selectRow(0);
  apply_->setEnabled(!fit.ranked.isEmpty());
}

void FitDialog::showError(const app::PlanError& error) {
  error_->setText(error.message);
  error_->setVisible(true);
}

void FitDialog::applySelected() {
  const int row = table_->currentRow();
  if (row < 0 || row >= result_.ranked.size()) return;
  emit applyRequested(result_.ranked[row].assignments);
}

}  // namespace fs::ui

#include "ui/compare/compare_page.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "app/monitor/run_monitor.h"
#include "app/monitor/series_names.h"
#include "ui/monitor/rollback_marks.h"
#include "ui/plots/curve_plot.h"

namespace fs::ui {

struct ComparePage::Run {
  QString dir;
  std::unique_ptr<app::RunMonitor> monitor;
};

namespace {

// Golden-angle hues: 50+ curves stay distinguishable from their neighbours.
QColor runColor(int i) {
  return QColor::fromHsv((i * 137) % 360, 200, 200);
}

app::RunMonitor::Options readOnce() {
  app::RunMonitor::Options o;
  o.poll_interval_ms = 250;
  o.follow_logs = false;
  o.process_check_interval_ms = 0;
  o.stall_check_interval_ms = 0;
  return o;
}

}  // namespace

ComparePage::ComparePage(QWidget* parent)
    : QWidget(parent),
      metric_(new QComboBox),
      xAxis_(new QComboBox),
      summary_(new QLabel),
      plot_(new CurvePlot) {
  setObjectName(QStringLiteral("comparePage"));
  metric_->addItem(tr("LAION loss"), QStringLiteral("loss/laion"));
  metric_->addItem(tr("MMC4 loss"), QStringLiteral("loss/mmc4"));
  metric_->addItem(tr("Learning rate"), QString::fromLatin1(app::series::kLr.data()));
  metric_->addItem(tr("Gradient norm"), QString::fromLatin1(app::series::kGradNorm.data()));
  metric_->addItem(tr("LAION samples/s"), QStringLiteral("samples_per_s/laion"));
  metric_->addItem(tr("MMC4 samples/s"), QStringLiteral("samples_per_s/mmc4"));
  xAxis_->addItem(tr("step"), static_cast<int>(app::XKind::kStep));
  xAxis_->addItem(tr("samples seen (all datasets)"), static_cast<int>(app::XKind::kSamples));
  xAxis_->addItem(tr("time since start (s)"), static_cast<int>(app::XKind::kRelativeTime));
  auto* import = new QPushButton(tr("Import reference curve (CSV)\u2026"));
  connect(import, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Reference curve"), QString(),
                                                      tr("CSV files (*.csv *.txt);;All files (*)"));
    if (!path.isEmpty()) emit importReferenceRequested(path);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Metric:")));
  row->addWidget(metric_);
  row->addWidget(new QLabel(tr("X axis:")));
  row->addWidget(xAxis_);
  row->addWidget(import);
  row->addStretch(1);
  row->addWidget(summary_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(row);
  layout->addWidget(plot_, 1);
  summary_->setText(tr("Select runs in History and press Overlay."));
  connect(metric_, &QComboBox::currentIndexChanged, this, &ComparePage::rebuildCurves);
  connect(xAxis_, &QComboBox::currentIndexChanged, this, &ComparePage::rebuildCurves);
}

ComparePage::~ComparePage() = default;

std::string ComparePage::metricName() const {
  return metric_->currentData().toString().toStdString();
}

app::XAxis ComparePage::axis() const {
  return app::XAxis{static_cast<app::XKind>(xAxis_->currentData().toInt()), {}};
}

void ComparePage::setRuns(const QStringList& runDirs) {
  runs_.clear();
  for (const QString& dir : runDirs) {
    auto run = std::make_unique<Run>();
    run->dir = dir;
    run->monitor = std::make_unique<app::RunMonitor>(readOnce());
    app::RunMonitor* monitor = run->monitor.get();
    connect(monitor->store(), &app::SeriesStore::changed, plot_, &CurvePlot::dataGrew);
    connect(monitor->store(), &app::SeriesStore::reset, plot_, &CurvePlot::resetData);
    const std::size_t index = runs_.size();
    connect(monitor->store(), &app::SeriesStore::reset, this, [this, index] { addAbandoned(index); });
    connect(monitor, &app::RunMonitor::runFinished, monitor, [monitor] { monitor->detach(); });
    monitor->attach(dir);
    runs_.push_back(std::move(run));
  }
  summary_->setText(tr("%n run(s)", nullptr, static_cast<int>(runs_.size())));
  rebuildCurves();
}

void ComparePage::addReferenceCurves(const app::ReferenceCurveSet& set) {
  for (const auto& c : set.curves) {
    app::ReferenceCurve copy = c;
    copy.name = QFileInfo(set.source).fileName() + QLatin1Char(':') + c.name;
    references_.push_back(std::move(copy));
  }
  rebuildCurves();
}

std::size_t ComparePage::pointsOf(int i) const {
  return runs_.at(static_cast<size_t>(i))->monitor->store()->y(metricName()).size();
}

void ComparePage::addAbandoned(std::size_t i) {
  if (i >= runs_.size()) return;
  const app::SeriesStore* store = runs_[i]->monitor->store();
  const app::XAxis x = axis();
  addAbandonedCurves(plot_, store, metricName(), QFileInfo(runs_[i]->dir).fileName(),
                     runColor(static_cast<int>(i)), [x] { return x; });
}

void ComparePage::rebuildCurves() {
  plot_->clearCurves();
  const std::string metric = metricName();
  for (size_t i = 0; i < runs_.size(); ++i) {
    const app::SeriesStore* store = runs_[i]->monitor->store();
    const app::XAxis x = axis();
    plot_->addCurve(
        QFileInfo(runs_[i]->dir).fileName(),
        [store, metric, x] {
          return CurveSpans{store->x(metric, x), store->y(metric)};
        },
        runColor(static_cast<int>(i)));
    addAbandoned(i);
  }
  for (const auto& ref : references_) {
    const app::ReferenceCurve* r = &ref;
    plot_->addCurve(
        ref.name,
        [r] {
          return CurveSpans{r->x, r->y};
        },
        QColor(Qt::black));
  }
  plot_->setAxisLabels(xAxis_->currentText(), metric_->currentText());
  plot_->setLegendVisible(runs_.size() + references_.size() <= 12);  // a legend of 50 hides the plot
  plot_->resetData();
}

}  // namespace fs::ui

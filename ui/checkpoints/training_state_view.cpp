#include "ui/checkpoints/training_state_view.h"

#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/plots/format_units.h"

// NOTE [Training state layout]
//   [message / Read training state] [progress] [Cancel]
//   left: Training (summary, RNG, data position) | LR scheduler | Optimizer groups
//   right: filter | per-parameter state (sortable; numbers sort as numbers)
// Per-parameter rows hold Qt::UserRole sort keys, so a column of norms sorts
// by value and missing figures ("-") sort first.

namespace fs::ui {
namespace {

constexpr int kSortRole = Qt::UserRole + 1;

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QString optional(const std::optional<double>& v) {
  return v ? TrainingStateView::number(*v) : QStringLiteral("-");
}

QString shapeText(const std::vector<std::int64_t>& shape) {
  QStringList dims;
  for (std::int64_t d : shape) dims << QString::number(d);
  return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString numbers(const std::vector<double>& values) {
  QStringList out;
  for (double v : values) out << TrainingStateView::number(v);
  return QLatin1Char('[') + out.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QStandardItem* item(const QString& text, const QVariant& sortKey) {
  auto* it = new QStandardItem(text);
  it->setEditable(false);
  it->setData(sortKey, kSortRole);
  return it;
}

QString absentLine(const std::vector<std::string>& absent, const QString& part) {
  for (const auto& a : absent) {
    if (QString::fromStdString(a).contains(part)) return qs(a);
  }
  return QObject::tr("%1: not in this checkpoint").arg(part);
}

}  // namespace

QString TrainingStateView::number(double value) {
  return QString::asprintf("%.6g", value);
}

TrainingStateView::TrainingStateView(QWidget* parent)
    : QWidget(parent),
      message_(new QLabel),
      read_(new QPushButton(tr("Read training state"))),
      progress_(new QProgressBar),
      cancel_(new QPushButton(tr("Cancel"))),
      content_(new QWidget),
      summary_(new QLabel),
      scheduler_(new QLabel),
      groupsAbsent_(new QLabel),
      groups_(new QTableWidget(0, 8)),
      paramsTitle_(new QLabel),
      filter_(new QLineEdit),
      params_(new QStandardItemModel(0, kParamColumns, this)),
      proxy_(new QSortFilterProxyModel(this)),
      paramsView_(new QTableView) {
  setObjectName(QStringLiteral("trainingStateView"));
  read_->setObjectName(QStringLiteral("readTrainingState"));
  read_->setToolTip(tr("Reads the optimizer's moments to compute their norms"));
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(200);
  cancel_->setObjectName(QStringLiteral("cancelTrainingState"));
  message_->setWordWrap(true);
  auto* top = new QHBoxLayout;
  top->addWidget(message_, 1);
  top->addWidget(read_);
  top->addWidget(progress_);
  top->addWidget(cancel_);

  for (QLabel* l : {summary_, scheduler_, groupsAbsent_}) {
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  }
  summary_->setObjectName(QStringLiteral("trainingSummary"));
  scheduler_->setObjectName(QStringLiteral("schedulerState"));
  groups_->setObjectName(QStringLiteral("optimizerGroups"));
  groups_->setHorizontalHeaderLabels({tr("Group"), tr("Params"), tr("lr"), tr("Weight decay"), tr("beta1"),
                                      tr("beta2"), tr("eps"), tr("Initial lr")});
  groups_->verticalHeader()->setVisible(false);
  groups_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  groups_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

  params_->setHorizontalHeaderLabels(
      {tr("Id"), tr("Parameter"), tr("Group"), tr("Step"), tr("|exp_avg|"), tr("|exp_avg_sq|"), tr("Shape")});
  proxy_->setSourceModel(params_);
  proxy_->setSortRole(kSortRole);
  proxy_->setFilterKeyColumn(kName);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  paramsView_->setObjectName(QStringLiteral("optimizerParams"));
  paramsView_->setModel(proxy_);
  paramsView_->setSortingEnabled(true);
  paramsView_->sortByColumn(kId, Qt::AscendingOrder);
  paramsView_->verticalHeader()->setVisible(false);
  paramsView_->setAlternatingRowColors(true);
  paramsView_->setTextElideMode(Qt::ElideLeft);
  paramsView_->setWordWrap(false);
  paramsView_->horizontalHeader()->setStretchLastSection(true);
  filter_->setObjectName(QStringLiteral("paramFilter"));
  filter_->setPlaceholderText(tr("Filter parameters by name"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);

  auto* left = new QWidget;
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  auto box = [](const QString& title, std::initializer_list<QWidget*> widgets) {
    auto* g = new QGroupBox(title);
    auto* l = new QVBoxLayout(g);
    for (QWidget* w : widgets) l->addWidget(w);
    return g;
  };
  leftLayout->addWidget(box(tr("Training"), {summary_}));
  leftLayout->addWidget(box(tr("LR scheduler"), {scheduler_}));
  leftLayout->addWidget(box(tr("Optimizer groups"), {groupsAbsent_, groups_}), 1);
  auto* right = new QWidget;
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addWidget(paramsTitle_);
  rightLayout->addWidget(filter_);
  rightLayout->addWidget(paramsView_, 1);
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto* contentLayout = new QVBoxLayout(content_);
  contentLayout->setContentsMargins(0, 0, 0, 0);
  contentLayout->addWidget(split);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(content_, 1);
  connect(read_, &QPushButton::clicked, this, &TrainingStateView::readRequested);
  connect(cancel_, &QPushButton::clicked, this, &TrainingStateView::cancelRequested);
  setMessage(tr("Open a checkpoint to see its training state."), false);
}

void TrainingStateView::showContent(bool content) {
  content_->setVisible(content);
  progress_->setVisible(false);
  cancel_->setVisible(false);
}

void TrainingStateView::setMessage(const QString& text, bool canRead) {
  hasResult_ = false;
  showContent(false);
  message_->setText(text);
  message_->setVisible(true);
  read_->setVisible(canRead);
}

void TrainingStateView::setRunning(const QString& what) {
  hasResult_ = false;
  content_->setVisible(false);
  message_->setText(what);
  message_->setVisible(true);
  read_->setVisible(false);
  progress_->setValue(0);
  progress_->setVisible(true);
  cancel_->setVisible(true);
}

void TrainingStateView::setProgress(quint64 done, quint64 total) {
  progress_->setValue(total == 0 ? 0 : static_cast<int>(done * 1000 / total));
}

void TrainingStateView::setResult(const app::TrainingStateResult& result) {
  const inspect::TrainingState& s = result.state;
  showContent(true);
  hasResult_ = true;
  message_->setText(
      tr("<b>%1</b> (%2)").arg(result.path.toHtmlEscaped(), qs(std::string(inspect::formatName(s.format)))));
  read_->setVisible(false);
  summary_->setText(summaryHtml(result));
  if (s.scheduler) {
    const inspect::SchedulerState& c = *s.scheduler;
    scheduler_->setText(tr("last_epoch %1, _step_count %2<br>base_lrs %3<br>_last_lr %4")
                            .arg(c.lastEpoch ? QString::number(*c.lastEpoch) : QStringLiteral("-"),
                                 c.stepCount ? QString::number(*c.stepCount) : QStringLiteral("-"),
                                 numbers(c.baseLrs), numbers(c.lastLr)));
  } else {
    scheduler_->setText(absentLine(s.absent, QStringLiteral("LR scheduler state")));
  }
  fillGroups(s);
  fillParams(s);
}

QString TrainingStateView::summaryHtml(const app::TrainingStateResult& result) const {
  const inspect::TrainingState& s = result.state;
  QStringList lines;
  if (s.resume) {
    const inspect::ResumeInfo& r = *s.resume;
    lines << tr("<b>%1</b> checkpoint at optimizer step <b>%2</b>, iteration %3, epoch %4")
                 .arg(qs(r.kind), formatInteger(r.step), formatInteger(r.iteration))
                 .arg(r.epoch);
    lines << (result.dataPosition.isEmpty()
                  ? absentLine(s.absent, QStringLiteral("data position"))
                  : tr("Data position: %1").arg(result.dataPosition.toHtmlEscaped()));
    if (r.rng.empty()) lines << tr("RNG state: none");
    for (const auto& g : r.rng) {
      lines << tr("RNG %1: %2, <tt>%3</tt>")
                   .arg(qs(g.name).toHtmlEscaped(), formatBytes(static_cast<std::int64_t>(g.bytes)),
                        qs(g.hash));
    }
  } else {
    if (s.epoch) lines << tr("Epoch %1 (the checkpoint's top-level \"epoch\")").arg(*s.epoch);
    lines << absentLine(s.absent, QStringLiteral("RNG state"));
  }
  return lines.join(QStringLiteral("<br>"));
}

void TrainingStateView::fillGroups(const inspect::TrainingState& s) {
  groups_->setRowCount(0);
  groups_->setVisible(s.optimizer.has_value());
  groupsAbsent_->setVisible(true);
  if (!s.optimizer) {
    groupsAbsent_->setText(absentLine(s.absent, QStringLiteral("optimizer state")));
    return;
  }
  const inspect::OptimizerState& o = *s.optimizer;
  groupsAbsent_->setText(tr("%1 parameter groups, state for %2 parameters (%3)")
                             .arg(o.groups.size())
                             .arg(o.params.size())
                             .arg(o.nameSource.empty() ? tr("names unknown: ids only")
                                                       : tr("names from %1").arg(qs(o.nameSource))));
  groups_->setRowCount(static_cast<int>(o.groups.size()));
  for (int r = 0; r < groups_->rowCount(); ++r) {
    const inspect::OptimizerGroup& g = o.groups[static_cast<std::size_t>(r)];
    const QStringList cells = {QString::number(g.index),
                               formatInteger(static_cast<std::int64_t>(g.params)),
                               number(g.lr),
                               number(g.weightDecay),
                               number(g.beta1),
                               number(g.beta2),
                               number(g.eps),
                               g.initialLr ? number(*g.initialLr) : QStringLiteral("-")};
    for (int c = 0; c < cells.size(); ++c) groups_->setItem(r, c, new QTableWidgetItem(cells[c]));
  }
}

void TrainingStateView::fillParams(const inspect::TrainingState& s) {
  params_->removeRows(0, params_->rowCount());
  filter_->setEnabled(s.optimizer.has_value());
  paramsView_->setEnabled(s.optimizer.has_value());
  if (!s.optimizer) {
    paramsTitle_->setText(
        tr("Per-parameter state: %1").arg(absentLine(s.absent, QStringLiteral("optimizer state"))));
    return;
  }
  paramsTitle_->setText(tr("Per-parameter state (AdamW): %1 parameters").arg(s.optimizer->params.size()));
  const QVariant none = -1.0;
  for (const inspect::OptimizerParamState& p : s.optimizer->params) {
    QList<QStandardItem*> row;
    row << item(QString::number(p.id), static_cast<qlonglong>(p.id));
    row << item(p.name.empty() ? QStringLiteral("?") : qs(p.name), qs(p.name));
    row << item(p.group ? QString::number(*p.group) : QStringLiteral("-"),
                p.group ? QVariant(static_cast<qlonglong>(*p.group)) : QVariant(qlonglong{-1}));
    row << item(optional(p.step), p.step ? QVariant(*p.step) : none);
    row << item(optional(p.expAvgNorm), p.expAvgNorm ? QVariant(*p.expAvgNorm) : none);
    row << item(optional(p.expAvgSqNorm), p.expAvgSqNorm ? QVariant(*p.expAvgSqNorm) : none);
    row << item(shapeText(p.shape), shapeText(p.shape));
    params_->appendRow(row);
  }
  paramsView_->resizeColumnsToContents();
  // Long names elide at the front (their ends tell them apart): the norms stay in view.
  paramsView_->setColumnWidth(kName, std::min(paramsView_->columnWidth(kName), 330));
}

}  // namespace fs::ui

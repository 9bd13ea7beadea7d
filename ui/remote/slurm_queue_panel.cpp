#include "ui/remote/slurm_queue_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

using app::cluster::SlurmJobRow;
using app::cluster::SlurmPoller;

QColor stateColour(const std::string& state) {
  if (state == "RUNNING" || state == "COMPLETING") return QColor(0x2e, 0x7d, 0x32);
  if (state == "PENDING" || state == "REQUEUED" || state == "SUSPENDED") return QColor(0xc7, 0x7c, 0x02);
  if (state == "COMPLETED") return QColor(0x15, 0x65, 0xc0);
  if (app::cluster::isActiveState(state)) return QColor(0x42, 0x42, 0x42);
  return QColor(0xc6, 0x28, 0x28);  // FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, UNKNOWN...
}

}  // namespace

SlurmQueuePanel::SlurmQueuePanel(std::shared_ptr<HostOpenerService> hosts, QWidget* parent)
    : QWidget(parent),
      hosts_(std::move(hosts)),
      worker_(std::make_unique<app::WorkerThread<RemoteWorker>>(new RemoteWorker(hosts_),
                                                                QStringLiteral("slurm-queue"))),
      table_(new QTableWidget(0, kColumnCount)),
      state_(new QLabel),
      refresh_(new QPushButton(tr("Refresh"))),
      cancel_(new QPushButton(tr("Cancel job\u2026"))) {
  qRegisterMetaType<QList<fs::app::cluster::SlurmJobRow>>();
  setObjectName(QStringLiteral("slurmQueuePanel"));
  confirm_ = [this](const QString& question) {
    return QMessageBox::question(this, tr("Cancel SLURM job"), question) == QMessageBox::Yes;
  };
  table_->setHorizontalHeaderLabels(
      {tr("Job"), tr("Name"), tr("State"), tr("Reason"), tr("Elapsed"), tr("Nodes"), tr("Node list")});
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  state_->setTextFormat(Qt::PlainText);
  state_->setObjectName(QStringLiteral("queueState"));
  refresh_->setObjectName(QStringLiteral("refreshQueue"));
  cancel_->setObjectName(QStringLiteral("cancelJob"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(state_, 1);
  bar->addWidget(refresh_);
  bar->addWidget(cancel_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(table_, 1);
  showInterval(SlurmPoller::kIntervalMs, {});

  connect(refresh_, &QPushButton::clicked, this, &SlurmQueuePanel::refresh);
  connect(cancel_, &QPushButton::clicked, this, &SlurmQueuePanel::cancelSelected);
  RemoteWorker* worker = worker_->worker();
  connect(worker, &RemoteWorker::hostOpened, this,
          [this](const QString& name, const std::shared_ptr<app::remote::Host>& host) {
            if (name == host_) startPoller(host);
          });
  connect(worker, &RemoteWorker::hostFailed, this, [this](const QString& name, const QString& why) {
    if (name == host_) state_->setText(tr("Cannot reach %1: %2").arg(name, why));
  });
  connect(worker, &RemoteWorker::slurmCancelled, this, [this](const QString&, const QString& id) {
    emit message(tr("Cancelled SLURM job %1").arg(id));
    refresh();
  });
  connect(worker, &RemoteWorker::slurmFailed, this, [this](const QString& what, const QString& why) {
    state_->setText(what + QStringLiteral(": ") + why);
    emit message(what + QStringLiteral(": ") + why);
  });
}

SlurmQueuePanel::~SlurmQueuePanel() {
  if (poller_) poller_->worker()->stop();  // a poll in progress is cancelled before the join
}

QString SlurmQueuePanel::intervalText() const {
  return state_->text();
}

void SlurmQueuePanel::watch(const QString& loginHost, const QString& jobId) {
  if (loginHost != host_) {
    if (poller_) poller_->worker()->stop();
    poller_.reset();
    ids_.clear();
    setRows({});
    host_ = loginHost;
  }
  if (!ids_.contains(jobId)) ids_ << jobId;
  if (poller_) {
    SlurmPoller* p = poller_->worker();
    const QStringList ids = ids_;
    QMetaObject::invokeMethod(p, [p, ids] { p->watch(ids); });
    return;
  }
  state_->setText(tr("Connecting to %1\u2026").arg(host_));
  RemoteWorker* worker = worker_->worker();
  QMetaObject::invokeMethod(worker, [worker, host = host_] { worker->openHost(host); });
}

void SlurmQueuePanel::startPoller(const std::shared_ptr<app::remote::Host>& host) {
  if (poller_) return;
  poller_ =
      std::make_unique<app::WorkerThread<SlurmPoller>>(new SlurmPoller(host), QStringLiteral("slurm-poller"));
  SlurmPoller* p = poller_->worker();
  connect(p, &SlurmPoller::rows, this, [this](const QList<SlurmJobRow>& rows) {
    setRows(rows);
    showInterval(SlurmPoller::kIntervalMs, {});
  });
  connect(p, &SlurmPoller::failed, this,
          [this](const QString& why, int retryMs) { showInterval(retryMs, why); });
  const QStringList ids = ids_;
  QMetaObject::invokeMethod(p, [p, ids] { p->watch(ids); });
}

void SlurmQueuePanel::showInterval(int ms, const QString& failure) {
  const QString where = host_.isEmpty() ? tr("Jobs submitted from here") : host_;
  if (failure.isEmpty())
    state_->setText(tr("%1: polled every %2 s").arg(where).arg(ms / 1000));
  else
    state_->setText(tr("%1: %2 (next try in %3 s)").arg(where, failure).arg(ms / 1000));
}

void SlurmQueuePanel::setRows(const QList<SlurmJobRow>& rows) {
  const QString selected = table_->currentRow() >= 0 && table_->item(table_->currentRow(), kId)
                               ? table_->item(table_->currentRow(), kId)->text()
                               : QString();
  table_->setRowCount(static_cast<int>(rows.size()));
  for (int r = 0; r < rows.size(); ++r) {
    const SlurmJobRow& row = rows[r];
    const std::string* cells[] = {&row.id,      &row.name,  &row.state,   &row.reason,
                                  &row.elapsed, &row.nodes, &row.nodelist};
    for (int c = 0; c < kColumnCount; ++c) {
      auto* item = new QTableWidgetItem(QString::fromStdString(*cells[c]));
      if (c == kState) item->setForeground(stateColour(row.state));
      table_->setItem(r, c, item);
    }
    if (QString::fromStdString(row.id) == selected) table_->selectRow(r);
  }
  for (int c = 0; c < kNodeList; ++c) table_->resizeColumnToContents(c);  // the node list stretches
}

void SlurmQueuePanel::refresh() {
  if (!poller_) return;
  SlurmPoller* p = poller_->worker();
  QMetaObject::invokeMethod(p, [p] { p->pollNow(); });
}

void SlurmQueuePanel::cancelSelected() {
  const int row = table_->currentRow();
  if (row < 0 || !table_->item(row, kId) || host_.isEmpty()) return;
  const QString id = table_->item(row, kId)->text();
  const QString name = table_->item(row, kName) ? table_->item(row, kName)->text() : QString();
  if (!confirm_(tr("Cancel job %1 (%2) on %3? Its ranks get SIGTERM, then SIGKILL.").arg(id, name, host_)))
    return;
  RemoteWorker* worker = worker_->worker();
  QMetaObject::invokeMethod(worker, [worker, host = host_, id] { worker->cancelSlurmJob(host, id); });
}

}  // namespace fs::ui

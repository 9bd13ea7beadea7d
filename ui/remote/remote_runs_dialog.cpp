#include "ui/remote/remote_runs_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

enum Column { kName, kState, kLauncher, kWorld, kCreated, kNodes, kColumns };
constexpr int kDirRole = Qt::UserRole;

QString nodesOf(const app::cluster::RemoteRun& run) {
  if (!run.launchError.isEmpty()) return QObject::tr("launch.json: %1").arg(run.launchError);
  if (!run.launch) return {};
  if (run.launch->slurm)
    return QObject::tr("SLURM job %1").arg(QString::fromStdString(run.launch->slurm->job_id));
  QStringList hosts;
  for (const auto& n : run.launch->nodes) hosts << QString::fromStdString(n.host);
  return hosts.join(QStringLiteral(", "));
}

}  // namespace

RemoteRunsDialog::RemoteRunsDialog(std::shared_ptr<HostOpenerService> hosts, QWidget* parent,
                                   const app::remote::SshConfigOptions& sshConfig)
    : QDialog(parent),
      worker_(std::make_unique<app::WorkerThread<RemoteWorker>>(new RemoteWorker(std::move(hosts)),
                                                                QStringLiteral("remote-runs"))),
      host_(new QComboBox),
      root_(new QLineEdit),
      list_(new QPushButton(tr("&List"))),
      cancel_(new QPushButton(tr("&Cancel"))),
      attach_(new QPushButton(tr("&Attach"))),
      addToHistory_(new QPushButton(tr("Add to &History"))),
      table_(new QTreeWidget),
      status_(new QLabel) {
  setWindowTitle(tr("Remote runs"));
  host_->setEditable(true);
  host_->addItem(QStringLiteral("local"));
  host_->setObjectName(QStringLiteral("remoteRunsHost"));
  root_->setObjectName(QStringLiteral("remoteRunsRoot"));
  root_->setPlaceholderText(tr("run root on the host (relative: under the login directory)"));
  table_->setObjectName(QStringLiteral("remoteRunsTable"));
  table_->setColumnCount(kColumns);
  table_->setHeaderLabels({tr("Name"), tr("State"), tr("Launcher"), tr("World"), tr("Created"), tr("Nodes")});
  table_->setRootIsDecorated(false);
  table_->setUniformRowHeights(true);
  table_->header()->setStretchLastSection(true);
  status_->setWordWrap(true);

  auto* form = new QFormLayout;
  form->addRow(tr("&Host:"), host_);
  form->addRow(tr("Run &root:"), root_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(list_);
  buttons->addWidget(cancel_);
  buttons->addStretch();
  buttons->addWidget(addToHistory_);
  buttons->addWidget(attach_);
  auto* close = new QDialogButtonBox(QDialogButtonBox::Close);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(table_, 1);
  layout->addWidget(status_);
  layout->addWidget(close);
  resize(820, 420);

  RemoteWorker* worker = worker_->worker();
  connect(worker, &RemoteWorker::aliasesLoaded, this, [this](const QStringList& aliases, const QString&) {
    for (const QString& a : aliases)
      if (host_->findText(a) < 0) host_->addItem(a);
  });
  connect(worker, &RemoteWorker::runRootScanned, this, &RemoteRunsDialog::showScan);
  connect(list_, &QPushButton::clicked, this, &RemoteRunsDialog::listRuns);
  connect(root_, &QLineEdit::returnPressed, this, &RemoteRunsDialog::listRuns);
  connect(cancel_, &QPushButton::clicked, this, &RemoteRunsDialog::cancelListing);
  connect(attach_, &QPushButton::clicked, this, &RemoteRunsDialog::attachSelected);
  connect(addToHistory_, &QPushButton::clicked, this, &RemoteRunsDialog::addSelectedToHistory);
  connect(table_, &QTreeWidget::itemActivated, this, &RemoteRunsDialog::attachSelected);
  connect(table_, &QTreeWidget::itemSelectionChanged, this, &RemoteRunsDialog::updateButtons);
  connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
  QMetaObject::invokeMethod(worker, [worker, sshConfig] { worker->loadAliases(sshConfig); });
  updateButtons();
}

RemoteRunsDialog::~RemoteRunsDialog() {
  worker_->worker()->cancel();  // a listing in progress ends at its next directory
}

void RemoteRunsDialog::listRuns() {
  const QString host = host_->currentText().trimmed();
  const QString root = root_->text().trimmed();
  if (listing_ || host.isEmpty() || root.isEmpty()) return;
  listing_ = true;
  status_->setText(tr("Listing %1 on %2\u2026").arg(root, host));
  RemoteWorker* worker = worker_->worker();
  worker->armCancel();
  QMetaObject::invokeMethod(worker, [worker, host, root] { worker->scanRunRoot(host, root); });
  listedHost_ = host;
  updateButtons();
}

void RemoteRunsDialog::cancelListing() {
  if (listing_) worker_->worker()->cancel();
}

void RemoteRunsDialog::showScan(const app::cluster::RemoteRunScan& scan) {
  listing_ = false;
  table_->clear();
  if (!scan.error.isEmpty()) {
    status_->setText(tr("Cannot list %1 on %2: %3").arg(scan.root, listedHost_, scan.error));
  } else if (scan.cancelled) {
    status_->setText(tr("Listing cancelled"));
  } else {
    status_->setText(tr("%n run(s) under %1 on %2", nullptr, static_cast<int>(scan.runs.size()))
                         .arg(scan.root, listedHost_));
  }
  for (const app::cluster::RemoteRun& run : scan.runs) {
    const app::RunSummary& s = run.summary;
    auto* item = new QTreeWidgetItem(table_);
    item->setText(kName, s.name);
    item->setData(kName, kDirRole, s.dir);
    item->setToolTip(kName, s.dir);
    if (s.isOk()) {
      item->setText(kState, s.state);
      item->setText(kLauncher, s.launcher);
      item->setText(kWorld, QString::number(s.worldSize));
      item->setText(kCreated, s.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")));
      item->setText(kNodes, nodesOf(run));
    } else {
      item->setText(kState, tr("unreadable"));
      item->setText(kNodes, s.error);
      item->setForeground(kState, Qt::red);
      item->setToolTip(kState, s.error);
    }
  }
  for (int c = 0; c < kColumns - 1; ++c) table_->resizeColumnToContents(c);
  updateButtons();
  emit listed(scan);
}

void RemoteRunsDialog::attachSelected() {
  QTreeWidgetItem* item = table_->currentItem();
  if (item == nullptr) return;
  emit attachRequested(listedHost_, item->data(kName, kDirRole).toString());
}

void RemoteRunsDialog::addSelectedToHistory() {
  QTreeWidgetItem* item = table_->currentItem();
  if (item == nullptr) return;
  const QString dir = item->data(kName, kDirRole).toString();
  status_->setText(tr("Adding %1:%2 to History\u2026").arg(listedHost_, dir));
  emit addToHistoryRequested(listedHost_, dir);
}

void RemoteRunsDialog::updateButtons() {
  list_->setEnabled(!listing_);
  cancel_->setEnabled(listing_);
  attach_->setEnabled(!listing_ && table_->currentItem() != nullptr);
  addToHistory_->setEnabled(attach_->isEnabled());
}

}  // namespace fs::ui

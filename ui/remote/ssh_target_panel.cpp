#include "ui/remote/ssh_target_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "ui/remote/field_binding.h"
#include "ui/remote/preflight_table_view.h"

namespace fs::ui {

SshTargetPanel::SshTargetPanel(app::ConfigDocument* document, RemoteWorker* worker, QWidget* parent)
    : QWidget(parent),
      document_(document),
      worker_(worker),
      picker_(new QComboBox),
      list_(new QListWidget),
      check_(new QPushButton(tr("Check hosts"))),
      cancel_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar),
      state_(new QLabel),
      table_(new PreflightTableView) {
  setObjectName(QStringLiteral("sshTargetPanel"));
  picker_->setEditable(true);
  picker_->setObjectName(QStringLiteral("hostPicker"));
  picker_->setInsertPolicy(QComboBox::NoInsert);
  picker_->lineEdit()->setPlaceholderText(tr("ssh config alias or [user@]host[:port]"));
  picker_->addItem(QStringLiteral("local"));
  picker_->setCurrentIndex(-1);  // empty: the placeholder says what to type
  list_->setObjectName(QStringLiteral("hostList"));
  list_->setMaximumHeight(120);

  auto* add = new QPushButton(tr("Add"));
  auto* remove = new QPushButton(tr("Remove"));
  auto* up = new QPushButton(tr("Up"));
  auto* down = new QPushButton(tr("Down"));
  connect(add, &QPushButton::clicked, this, &SshTargetPanel::addHost);
  connect(picker_->lineEdit(), &QLineEdit::returnPressed, this, &SshTargetPanel::addHost);
  connect(remove, &QPushButton::clicked, this,
          [this] { editHosts([this] { delete list_->takeItem(list_->currentRow()); }); });
  auto move = [this](int by) {
    const int row = list_->currentRow();
    if (row < 0 || row + by < 0 || row + by >= list_->count()) return;
    editHosts([this, row, by] {
      list_->insertItem(row + by, list_->takeItem(row));
      list_->setCurrentRow(row + by);
    });
  };
  connect(up, &QPushButton::clicked, this, [move] { move(-1); });
  connect(down, &QPushButton::clicked, this, [move] { move(+1); });

  auto* pick = new QHBoxLayout;
  pick->addWidget(picker_, 1);
  pick->addWidget(add);
  auto* order = new QVBoxLayout;
  for (QPushButton* b : {remove, up, down}) order->addWidget(b);
  order->addStretch();
  auto* hostsRow = new QHBoxLayout;
  hostsRow->addWidget(list_, 1);
  hostsRow->addLayout(order);

  auto* address = new QLineEdit;
  address->setPlaceholderText(tr("node 0's address as the other nodes reach it"));
  bindLineEdit(address, document_, QStringLiteral("launch.master_addr"));
  auto* port = new QSpinBox;
  port->setRange(1, 65535);
  bindSpinBox(port, document_, QStringLiteral("launch.master_port"));

  auto* form = new QFormLayout;
  form->addRow(tr("Add host:"), pick);
  form->addRow(tr("Nodes (node 0 first):"), hostsRow);
  form->addRow(tr("Rendezvous address:"), address);
  form->addRow(tr("Rendezvous port:"), port);

  check_->setObjectName(QStringLiteral("checkHosts"));
  cancel_->setObjectName(QStringLiteral("cancelCheck"));
  progress_->setRange(0, 0);  // busy: the checks report steps, not a fraction
  progress_->setMaximumWidth(160);
  state_->setTextFormat(Qt::PlainText);
  state_->setObjectName(QStringLiteral("checkState"));
  connect(check_, &QPushButton::clicked, this, &SshTargetPanel::checkHosts);
  connect(cancel_, &QPushButton::clicked, this, &SshTargetPanel::cancelCheck);
  auto* checkRow = new QHBoxLayout;
  checkRow->addWidget(check_);
  checkRow->addWidget(cancel_);
  checkRow->addWidget(progress_);
  checkRow->addWidget(state_, 1);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addLayout(checkRow);
  layout->addWidget(table_, 1);
  setChecking(false);

  connect(worker_, &RemoteWorker::preflightProgress, this, &SshTargetPanel::onProgress);
  connect(worker_, &RemoteWorker::preflightDone, this, &SshTargetPanel::onDone);
}

QStringList SshTargetPanel::hosts() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i) out << list_->item(i)->text();
  return out;
}

void SshTargetPanel::setHosts(const QStringList& hosts) {
  if (hosts == this->hosts()) return;
  list_->clear();
  list_->addItems(hosts);
}

void SshTargetPanel::setAliases(const QStringList& aliases) {
  const QString typed = picker_->currentText();
  picker_->clear();
  picker_->addItem(QStringLiteral("local"));
  for (const QString& a : aliases)
    if (a != QLatin1String("local")) picker_->addItem(a);
  picker_->setEditText(typed);
}

void SshTargetPanel::addHost() {
  const QString host = picker_->currentText().trimmed();
  if (host.isEmpty()) return;
  editHosts([this, host] { list_->addItem(host); });
  picker_->setEditText({});
}

void SshTargetPanel::editHosts(const std::function<void()>& change) {
  change();
  table_->clear();  // the last check was about other hosts
  emit hostsEdited(hosts());
}

void SshTargetPanel::checkHosts() {
  if (checking_) return;
  PreflightInput input = inputSource_ ? inputSource_() : PreflightInput{};
  input.hosts.clear();
  for (const QString& h : hosts()) input.hosts.push_back(h.toStdString());
  if (input.hosts.empty()) {
    state_->setText(tr("Add at least one host (node 0 first)."));
    return;
  }
  const auto& config = document_->config();
  input.rendezvousAddress = config.launch.master_addr;
  input.rendezvousPort = static_cast<int>(config.launch.master_port);
  // GPUs each node needs: one per rank when the ranks talk NCCL.
  input.gpusPerNode =
      config.parallel.dist_backend == "nccl" ? static_cast<int>(config.launch.nproc_per_node) : 0;
  setChecking(true);
  table_->clear();
  state_->setText(tr("Starting the checks\u2026"));
  RemoteWorker* worker = worker_;
  worker->armCancel();
  QMetaObject::invokeMethod(worker, [worker, input] { worker->preflight(input); });
}

void SshTargetPanel::cancelCheck() {
  if (!checking_) return;
  worker_->cancel();
  state_->setText(tr("Cancelling\u2026"));
}

void SshTargetPanel::onProgress(const QString& message) {
  if (checking_) state_->setText(message);
}

void SshTargetPanel::onDone(const app::cluster::PreflightTable& table, bool cancelled) {
  if (!checking_) return;
  setChecking(false);
  if (cancelled) {
    state_->setText(tr("Check cancelled."));
    return;
  }
  table_->setTable(table);
  state_->setText(table.ok() ? tr("Checked %n host(s).", nullptr, static_cast<int>(hosts().size()))
                             : tr("Some checks failed: see the actions below."));
  emit checkFinished(table.ok());
}

void SshTargetPanel::setChecking(bool checking) {
  checking_ = checking;
  check_->setEnabled(!checking);
  cancel_->setVisible(checking);
  progress_->setVisible(checking);
}

}  // namespace fs::ui

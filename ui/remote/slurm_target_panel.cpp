#include "ui/remote/slurm_target_panel.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "ui/remote/field_binding.h"

namespace fs::ui {

SlurmTargetPanel::SlurmTargetPanel(app::ConfigDocument* document, RemoteWorker* worker, QWidget* parent)
    : QWidget(parent),
      document_(document),
      worker_(worker),
      login_(new QComboBox),
      preview_(new QPlainTextEdit),
      note_(new QLabel),
      reset_(new QPushButton(tr("Reset to generated"))),
      submit_(new QPushButton(tr("Submit"))) {
  setObjectName(QStringLiteral("slurmTargetPanel"));
  login_->setEditable(true);
  login_->setObjectName(QStringLiteral("loginHost"));
  login_->addItem(QStringLiteral("local"));
  login_->lineEdit()->setPlaceholderText(tr("login node: ssh config alias, or local"));

  auto line = [this](const char* path, const QString& placeholder) {
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(placeholder);
    bindLineEdit(edit, document_, QString::fromLatin1(path));
    return edit;
  };
  auto spin = [this](const char* path) {
    auto* box = new QSpinBox;
    box->setRange(0, 100000);
    bindSpinBox(box, document_, QString::fromLatin1(path));
    return box;
  };
  auto* form = new QFormLayout;
  form->addRow(tr("Login host:"), login_);
  form->addRow(tr("Partition:"), line("launch.slurm.partition", tr("the cluster's default")));
  form->addRow(tr("Account:"), line("launch.slurm.account", tr("your default account")));
  form->addRow(tr("Time limit:"),
               line("launch.slurm.time_limit", tr("e.g. 1-00:00:00; empty: the partition's")));
  form->addRow(tr("GPUs per node:"), spin("launch.slurm.gpus_per_node"));
  form->addRow(tr("CPUs per task:"), spin("launch.slurm.cpus_per_task"));

  preview_->setObjectName(QStringLiteral("slurmScript"));
  preview_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  preview_->setLineWrapMode(QPlainTextEdit::NoWrap);
  note_->setWordWrap(true);
  note_->setTextFormat(Qt::PlainText);
  note_->setObjectName(QStringLiteral("scriptNote"));
  submit_->setObjectName(QStringLiteral("submitSlurm"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(note_, 1);
  buttons->addWidget(reset_);
  buttons->addWidget(submit_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  layout->addWidget(new QLabel(tr("Batch script (editable; submitted as shown):")));
  layout->addWidget(preview_, 1);
  layout->addLayout(buttons);

  connect(preview_, &QPlainTextEdit::textChanged, this, [this] {
    if (generating_ || edited_) return;
    edited_ = true;
    note_->setText(tr("Edited: config changes no longer update the script."));
  });
  connect(reset_, &QPushButton::clicked, this, &SlurmTargetPanel::resetToGenerated);
  connect(submit_, &QPushButton::clicked, this, &SlurmTargetPanel::submit);
  connect(document_, &app::ConfigDocument::fieldChanged, this, &SlurmTargetPanel::refresh);
  connect(document_, &app::ConfigDocument::datasetsChanged, this, &SlurmTargetPanel::refresh);
  connect(document_, &app::ConfigDocument::configReset, this, &SlurmTargetPanel::refresh);
  connect(worker_, &RemoteWorker::slurmSubmitted, this,
          [this](const QString& host, const QString& id, const QString& runDir) {
            if (!busy_) return;
            setBusy(false);
            note_->setText(tr("Submitted job %1 on %2 (run directory %3).").arg(id, host, runDir));
            emit submitted(host, id, runDir);
          });
  connect(worker_, &RemoteWorker::slurmFailed, this, [this](const QString& what, const QString& message) {
    if (!busy_) return;
    setBusy(false);
    note_->setText(what + QStringLiteral(": ") + message);
    emit submitFailed(message);
  });
}

void SlurmTargetPanel::setSpecSource(std::function<app::cluster::SlurmJobSpec()> source) {
  specSource_ = std::move(source);
  refresh();
}

app::cluster::SlurmJobSpec SlurmTargetPanel::spec() const {
  return specSource_ ? specSource_() : app::cluster::SlurmJobSpec{};
}

QString SlurmTargetPanel::loginHost() const {
  return login_->currentText().trimmed();
}

void SlurmTargetPanel::setAliases(const QStringList& aliases) {
  const QString typed = login_->currentText();
  login_->clear();
  login_->addItem(QStringLiteral("local"));
  for (const QString& a : aliases)
    if (a != QLatin1String("local")) login_->addItem(a);
  login_->setEditText(typed);
}

QString SlurmTargetPanel::script() const {
  return preview_->toPlainText();
}

void SlurmTargetPanel::refresh() {
  if (edited_) return;
  auto script = app::cluster::makeSlurmScript(document_->config(), spec());
  scriptValid_ = script.isOk();
  if (script) {
    setPreview(QString::fromStdString(script.value()));
    note_->clear();
  } else {
    setPreview({});
    note_->setText(QString::fromStdString(script.status().message()));
  }
  submit_->setEnabled(!busy_ && scriptValid_);
}

void SlurmTargetPanel::resetToGenerated() {
  edited_ = false;
  refresh();
}

void SlurmTargetPanel::setPreview(const QString& text) {
  if (preview_->toPlainText() == text) return;
  generating_ = true;
  preview_->setPlainText(text);
  generating_ = false;
}

void SlurmTargetPanel::submit() {
  if (busy_) return;
  if (document_->errorCount() > 0) {
    note_->setText(tr("The config has errors: fix them before submitting."));
    return;
  }
  if (script().trimmed().isEmpty() || (!edited_ && !scriptValid_)) {
    note_->setText(tr("No script to submit: %1").arg(note_->text()));
    return;
  }
  const QString host = loginHost();
  if (host.isEmpty()) {
    note_->setText(tr("Name the login host sbatch runs on (\"local\" on a login node)."));
    return;
  }
  if (submitGate_ && !submitGate_()) {
    note_->setText(
        tr("Not submitted: the shell commands or sbatch options of the config were not approved."));
    return;
  }
  setBusy(true);
  note_->setText(tr("Submitting through %1\u2026").arg(host));
  const QString runDir = QString::fromStdString(spec().run_dir);
  const QString text = script();
  const protocol::RunConfig config = document_->config();
  RemoteWorker* worker = worker_;
  QMetaObject::invokeMethod(
      worker, [worker, host, runDir, text, config] { worker->submitSlurm(host, runDir, text, config); });
}

void SlurmTargetPanel::setBusy(bool busy) {
  busy_ = busy;
  submit_->setEnabled(!busy && (edited_ || scriptValid_));
}

}  // namespace fs::ui

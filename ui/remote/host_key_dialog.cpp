#include "ui/remote/host_key_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

QLabel* selectable(const QString& text) {
  auto* label = new QLabel(text);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->setTextFormat(Qt::PlainText);
  return label;
}

}  // namespace

using app::remote::HostKeyAnswer;

HostKeyDialog::HostKeyDialog(const app::remote::HostKeyQuestion& q, QWidget* parent)
    : QDialog(parent), fingerprint_(selectable(QString::fromStdString(q.fingerprint_sha256))) {
  setObjectName(QStringLiteral("hostKeyDialog"));
  const bool otherType = q.kind == app::remote::HostKeyQuestion::Kind::kOtherType;
  setWindowTitle((otherType ? tr("Host key of another type for %1") : tr("Unknown host key for %1"))
                     .arg(QString::fromStdString(q.alias)));
  // kOtherType: the host is known, with keys of other types (named with file:line), as OpenSSH says it.
  auto* intro = new QLabel(
      otherType ? QString::fromStdString(app::remote::hostKeyQuestionText(q))
                : tr("The authenticity of this host can't be established: its key is in no known_hosts file. "
                     "Compare the fingerprint with the one the host's administrator gave you "
                     "(ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the host) before accepting it."));
  intro->setObjectName(QStringLiteral("intro"));
  intro->setTextFormat(Qt::PlainText);
  intro->setWordWrap(true);
  QFont mono = fingerprint_->font();
  mono.setFamily(QStringLiteral("monospace"));
  mono.setStyleHint(QFont::Monospace);
  fingerprint_->setFont(mono);
  fingerprint_->setObjectName(QStringLiteral("fingerprint"));
  auto* form = new QFormLayout;
  form->addRow(tr("Host:"), selectable(QString::fromStdString(q.host)));
  form->addRow(tr("Port:"), selectable(QString::number(q.port)));
  form->addRow(tr("Alias:"), selectable(QString::fromStdString(q.alias)));
  form->addRow(tr("Key type:"), selectable(QString::fromStdString(q.key_type)));
  form->addRow(tr("Fingerprint:"), fingerprint_);

  auto* buttons = new QDialogButtonBox;
  reject_ = buttons->addButton(tr("Reject"), QDialogButtonBox::RejectRole);
  acceptOnce_ = buttons->addButton(tr("Accept once"), QDialogButtonBox::AcceptRole);
  acceptSave_ = buttons->addButton(tr("Accept and save to %1").arg(QString::fromStdString(q.save_file)),
                                   QDialogButtonBox::AcceptRole);
  // Reject is the default: Enter never accepts a key.
  for (QPushButton* b : {acceptOnce_, acceptSave_}) b->setAutoDefault(false);
  reject_->setDefault(true);
  reject_->setFocus();
  connect(reject_, &QPushButton::clicked, this, [this] { answerWith(HostKeyAnswer::kReject); });
  connect(acceptOnce_, &QPushButton::clicked, this, [this] { answerWith(HostKeyAnswer::kAcceptOnce); });
  connect(acceptSave_, &QPushButton::clicked, this, [this] { answerWith(HostKeyAnswer::kAcceptAndSave); });

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addLayout(form);
  layout->addWidget(buttons);
}

QString HostKeyDialog::fingerprintText() const {
  return fingerprint_->text();
}

void HostKeyDialog::answerWith(HostKeyAnswer answer) {
  answer_ = answer;
  if (answer == HostKeyAnswer::kReject)
    reject();
  else
    accept();
}

PassphraseDialog::PassphraseDialog(const QString& keyFile, int attempt, QWidget* parent)
    : QDialog(parent), edit_(new QLineEdit) {
  setObjectName(QStringLiteral("passphraseDialog"));
  setWindowTitle(tr("Passphrase for %1").arg(keyFile));
  edit_->setEchoMode(QLineEdit::Password);
  edit_->setObjectName(QStringLiteral("passphrase"));
  QString text =
      tr("The key %1 is encrypted. Enter its passphrase (it is kept in memory only).").arg(keyFile);
  if (attempt > 1) text = tr("Wrong passphrase (attempt %1). ").arg(attempt) + text;
  auto* label = new QLabel(text);
  label->setWordWrap(true);
  label->setTextFormat(Qt::PlainText);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(label);
  layout->addWidget(edit_);
  layout->addWidget(buttons);
}

std::optional<app::remote::Secret> PassphraseDialog::takeSecret() {
  if (result() != QDialog::Accepted) {
    edit_->clear();
    return std::nullopt;
  }
  QByteArray utf8 = edit_->text().toUtf8();
  app::remote::Secret secret(std::string(utf8.constData(), static_cast<std::size_t>(utf8.size())));
  utf8.fill('\0');
  // Overwrite, then clear: the field's buffer no longer holds the text (password
  // mode keeps no undo history).
  edit_->setText(QString(edit_->text().size(), QLatin1Char(' ')));
  edit_->clear();
  return secret;
}

}  // namespace fs::ui

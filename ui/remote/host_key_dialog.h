// HostKeyDialog: "is this unknown host key the right one?" — the host, port,
// alias, key type and SHA256 fingerprint exactly as the SSH layer gives them,
// and three answers: Reject (the default, also Esc and closing the window),
// Accept once, Accept and save to <known_hosts file>.
//
// PassphraseDialog: the passphrase of an encrypted key file (attempt n), typed
// with echo off; takeSecret() moves the text into a Secret and clears the field.
//
// Neither answers anything by itself: DialogPrompter (dialog_prompter.h) shows
// them for the SSH layer; tests drive them through their buttons.
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>
#include <optional>

#include "app/remote/prompter.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace fs::ui {

class HostKeyDialog : public QDialog {
  Q_OBJECT
 public:
  explicit HostKeyDialog(const app::remote::HostKeyQuestion& question, QWidget* parent = nullptr);

  // kReject until Accept once / Accept and save was clicked.
  app::remote::HostKeyAnswer answer() const { return answer_; }
  QPushButton* rejectButton() const { return reject_; }
  QPushButton* acceptOnceButton() const { return acceptOnce_; }
  QPushButton* acceptSaveButton() const { return acceptSave_; }
  // The fingerprint as shown (selectable text).
  QString fingerprintText() const;

 private:
  void answerWith(app::remote::HostKeyAnswer answer);

  app::remote::HostKeyAnswer answer_ = app::remote::HostKeyAnswer::kReject;
  QLabel* fingerprint_;
  QPushButton* reject_;
  QPushButton* acceptOnce_;
  QPushButton* acceptSave_;
};

class PassphraseDialog : public QDialog {
  Q_OBJECT
 public:
  PassphraseDialog(const QString& keyFile, int attempt, QWidget* parent = nullptr);

  QLineEdit* lineEdit() const { return edit_; }
  // After accept: the typed text as a Secret (the field is cleared); nullopt
  // when the dialog was cancelled. Call once.
  std::optional<app::remote::Secret> takeSecret();

 private:
  QLineEdit* edit_;
};

}  // namespace fs::ui

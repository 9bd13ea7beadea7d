// DialogPrompter: the SSH layer's questions (app/remote/prompter.h) asked with
// dialogs — HostKeyDialog for an unknown host key or one known with keys of
// other types, PassphraseDialog for an
// encrypted key. Nothing is ever answered by itself: without a person the
// answer stays "reject" / "declined".
//
// NOTE [Prompting from a worker thread]: hostKey() and passphrase() are called
// on a worker thread (the one opening the Host). Each posts the dialog to the
// GUI thread (QMetaObject::invokeMethod, queued), opens it window-modal
// without a nested event loop, and blocks the worker until the dialog is
// answered. Not BlockingQueuedConnection: the GUI thread may be about to wait
// for that very worker (a WorkerThread being destroyed), so the worker waits
// on a future it can give up on — shutDown() (called by the owner before
// stopping its workers) and the destructor answer every open and later
// question with reject / declined. Called on the GUI thread itself (no worker),
// the question is refused: blocking there would freeze the window.
//
// Ownership: a QObject of the GUI thread, shared with the Hosts as a
// shared_ptr<Prompter>; the dialogs are children of `dialogParent`.
// Thread-safety: hostKey()/passphrase() from any thread but the GUI thread.
#pragma once

#include <QObject>
#include <QPointer>
#include <QWidget>
#include <atomic>
#include <memory>

#include "app/remote/prompter.h"

namespace fs::ui {

class DialogPrompter : public QObject, public app::remote::Prompter {
  Q_OBJECT
 public:
  explicit DialogPrompter(QWidget* dialogParent = nullptr);
  ~DialogPrompter() override;
  // For handing to Hosts: the last owner may be a worker thread, so the object is
  // deleted with deleteLater() on the GUI thread. Call on the GUI thread.
  static std::shared_ptr<DialogPrompter> create(QWidget* dialogParent);

  app::remote::HostKeyAnswer hostKey(const app::remote::HostKeyQuestion& question) override;
  std::optional<app::remote::Secret> passphrase(const std::string& key_file, int attempt) override;
  // HostKeyDialog asks about an unknown host and about one known with keys of other types.
  bool asksAbout(app::remote::HostKeyQuestion::Kind) const override { return true; }
  // Emits configWarning (queued to the GUI thread's receivers); never blocks.
  void warning(const std::string& text) override;

  // Every open question is answered reject / declined, and so is every later one.
  void shutDown();

 signals:
  // A dialog was opened (for tests and for raising the window).
  void dialogShown(QDialog* dialog);
  // A warning about an ssh_config the connection read ("file:line: ..."), from any thread.
  void configWarning(const QString& text);

 private:
  QPointer<QWidget> parent_;
  std::atomic<bool> down_{false};
};

}  // namespace fs::ui

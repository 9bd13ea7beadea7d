#include "ui/remote/dialog_prompter.h"

#include <QThread>
#include <chrono>
#include <future>
#include <memory>

#include "ui/remote/host_key_dialog.h"

namespace fs::ui {
namespace {

using app::remote::HostKeyAnswer;
using app::remote::Secret;

// Waits for the answer, giving up (fallback) once the prompter shuts down.
template <class T>
T await(std::future<T>& answer, const std::atomic<bool>& down, T fallback) {
  while (answer.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (down.load()) return fallback;
  }
  return answer.get();
}

bool onGuiThread(const QObject* o) {
  return QThread::currentThread() == o->thread();
}

}  // namespace

DialogPrompter::DialogPrompter(QWidget* dialogParent) : parent_(dialogParent) {}

std::shared_ptr<DialogPrompter> DialogPrompter::create(QWidget* dialogParent) {
  return std::shared_ptr<DialogPrompter>(new DialogPrompter(dialogParent), [](DialogPrompter* p) {
    p->shutDown();
    p->deleteLater();
  });
}

DialogPrompter::~DialogPrompter() {
  shutDown();
}

void DialogPrompter::shutDown() {
  down_ = true;
}

HostKeyAnswer DialogPrompter::hostKey(const app::remote::HostKeyQuestion& question) {
  if (down_ || onGuiThread(this)) return HostKeyAnswer::kReject;
  auto promise = std::make_shared<std::promise<HostKeyAnswer>>();
  std::future<HostKeyAnswer> answer = promise->get_future();
  QMetaObject::invokeMethod(
      this,
      [this, question, promise] {
        auto* dialog = new HostKeyDialog(question, parent_);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        // finished() comes once, for every way the dialog closes (buttons, Esc, window close).
        connect(dialog, &QDialog::finished, dialog,
                [dialog, promise] { promise->set_value(dialog->answer()); });
        dialog->open();
        emit dialogShown(dialog);
      },
      Qt::QueuedConnection);
  return await(answer, down_, HostKeyAnswer::kReject);
}

void DialogPrompter::warning(const std::string& text) {
  if (!down_) emit configWarning(QString::fromStdString(text));
}

std::optional<Secret> DialogPrompter::passphrase(const std::string& key_file, int attempt) {
  if (down_ || onGuiThread(this)) return std::nullopt;
  auto promise = std::make_shared<std::promise<std::optional<Secret>>>();
  std::future<std::optional<Secret>> answer = promise->get_future();
  QMetaObject::invokeMethod(
      this,
      [this, key_file, attempt, promise] {
        auto* dialog = new PassphraseDialog(QString::fromStdString(key_file), attempt, parent_);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        connect(dialog, &QDialog::finished, dialog,
                [dialog, promise] { promise->set_value(dialog->takeSecret()); });
        dialog->open();
        emit dialogShown(dialog);
      },
      Qt::QueuedConnection);
  return await(answer, down_, std::optional<Secret>());
}

}  // namespace fs::ui

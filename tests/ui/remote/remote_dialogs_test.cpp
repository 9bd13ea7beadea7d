// The SSH questions as dialogs: the host-key dialog shows the fingerprint as
// given and returns each of its three answers (Reject the default); the
// passphrase dialog hands the typed text over as a Secret and clears its field;
// DialogPrompter asks from a worker thread (a real std::thread) through the GUI
// thread and never answers by itself. Also the hosts the GUI opens: "local" is
// this machine, other names are SSH hosts (an unknown name fails, naming it).
#include <QApplication>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QtTest>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "ui/remote/dialog_prompter.h"
#include "ui/remote/host_key_dialog.h"
#include "ui/remote/host_opener_service.h"

namespace fs::ui {
namespace {

using app::remote::HostKeyAnswer;
using app::remote::HostKeyQuestion;

HostKeyQuestion question() {
  HostKeyQuestion q;
  q.host = "10.20.0.7";
  q.port = 2222;
  q.alias = "gpu-node-b";
  q.key_type = "ssh-ed25519";
  q.fingerprint_sha256 = "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8";
  q.save_file = "/home/alice/.ssh/known_hosts";
  return q;
}

template <class Dialog>
Dialog* openDialog() {
  for (QWidget* w : QApplication::topLevelWidgets()) {
    if (auto* d = qobject_cast<Dialog*>(w); d && d->isVisible()) return d;
  }
  return nullptr;
}

}  // namespace

class RemoteDialogsTest : public QObject {
  Q_OBJECT

 private slots:
  void hostKeyDialogShowsTheFingerprintAndEachAnswer() {
    for (int which = 0; which < 3; ++which) {
      HostKeyDialog dialog(question());
      dialog.show();
      QCOMPARE(dialog.fingerprintText(),
               QStringLiteral("SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"));
      QVERIFY(dialog.rejectButton()->isDefault());
      QVERIFY(!dialog.acceptOnceButton()->isDefault());
      QVERIFY(dialog.acceptSaveButton()->text().contains(QStringLiteral("/home/alice/.ssh/known_hosts")));
      QCOMPARE(dialog.answer(), HostKeyAnswer::kReject);  // nothing clicked: reject
      QPushButton* button = which == 0   ? dialog.rejectButton()
                            : which == 1 ? dialog.acceptOnceButton()
                                         : dialog.acceptSaveButton();
      QTest::mouseClick(button, Qt::LeftButton);
      const HostKeyAnswer expected = which == 0   ? HostKeyAnswer::kReject
                                     : which == 1 ? HostKeyAnswer::kAcceptOnce
                                                  : HostKeyAnswer::kAcceptAndSave;
      QCOMPARE(dialog.answer(), expected);
      QCOMPARE(dialog.result(), which == 0 ? int(QDialog::Rejected) : int(QDialog::Accepted));
    }
    // Enter (the default button) and Esc never accept.
    HostKeyDialog enter(question());
    enter.show();
    QTest::keyClick(&enter, Qt::Key_Return);
    QCOMPARE(enter.answer(), HostKeyAnswer::kReject);
    HostKeyDialog escape(question());
    escape.show();
    QTest::keyClick(&escape, Qt::Key_Escape);
    QCOMPARE(escape.answer(), HostKeyAnswer::kReject);
  }

  void hostKeyDialogSaysTheHostIsKnownWithAnotherKeyType() {
    HostKeyQuestion q = question();
    q.kind = HostKeyQuestion::Kind::kOtherType;
    q.known_keys.push_back(
        {"ecdsa-sha2-nistp256", "SHA256:AAAAstoredfingerprint", "/home/alice/.ssh/known_hosts", 7});
    HostKeyDialog dialog(q);
    dialog.show();
    QVERIFY(dialog.windowTitle().contains(QStringLiteral("another type")));
    auto* intro = dialog.findChild<QLabel*>(QStringLiteral("intro"));
    QVERIFY(intro != nullptr);
    // The terminal's words: known, with the stored key's type and file:line; never "no known_hosts file".
    QCOMPARE(intro->text(), QString::fromStdString(app::remote::hostKeyQuestionText(q)));
    QVERIFY(intro->text().contains(QStringLiteral("ecdsa-sha2-nistp256")));
    QVERIFY(intro->text().contains(QStringLiteral("/home/alice/.ssh/known_hosts:7")));
    QVERIFY(!intro->text().contains(QStringLiteral("no known_hosts file")));
    QVERIFY(dialog.rejectButton()->isDefault());
    QTest::keyClick(&dialog, Qt::Key_Return);
    QCOMPARE(dialog.answer(), HostKeyAnswer::kReject);

    HostKeyDialog unknown(question());
    QVERIFY(!unknown.findChild<QLabel*>(QStringLiteral("intro"))->text().contains(QStringLiteral("ecdsa")));
  }

  void prompterAsksAboutEveryKindAndPassesWarnings() {
    auto prompter = DialogPrompter::create(nullptr);
    QVERIFY(prompter->asksAbout(HostKeyQuestion::Kind::kUnknown));
    QVERIFY(prompter->asksAbout(HostKeyQuestion::Kind::kOtherType));
    QStringList warnings;
    connect(prompter.get(), &DialogPrompter::configWarning, this,
            [&warnings](const QString& text) { warnings << text; });
    std::thread worker([&] { prompter->warning("/home/alice/.ssh/config:3: Match blocks are ignored"); });
    worker.join();
    QTRY_COMPARE_WITH_TIMEOUT(warnings.size(), 1, 10000);
    QCOMPARE(warnings.front(), QStringLiteral("/home/alice/.ssh/config:3: Match blocks are ignored"));
  }

  void passphraseDialogGivesASecret() {
    PassphraseDialog dialog(QStringLiteral("/home/alice/.ssh/id_ed25519"), 2);
    dialog.show();
    QCOMPARE(dialog.lineEdit()->echoMode(), QLineEdit::Password);
    QTest::keyClicks(dialog.lineEdit(), QStringLiteral("correct horse"));
    dialog.accept();
    std::optional<app::remote::Secret> secret = dialog.takeSecret();
    QVERIFY(secret.has_value());
    QCOMPARE(std::strcmp(secret->c_str(), "correct horse"), 0);
    QVERIFY(dialog.lineEdit()->text().isEmpty());

    PassphraseDialog cancelled(QStringLiteral("/home/alice/.ssh/id_rsa"), 1);
    cancelled.show();
    QTest::keyClicks(cancelled.lineEdit(), QStringLiteral("typed, then cancelled"));
    cancelled.reject();
    QVERIFY(!cancelled.takeSecret().has_value());
    QVERIFY(cancelled.lineEdit()->text().isEmpty());
  }

  void prompterAsksOnTheGuiThreadFromAWorker() {
    auto prompter = DialogPrompter::create(nullptr);
    std::atomic<int> answer{-1};
    std::thread worker([&] { answer = static_cast<int>(prompter->hostKey(question())); });
    HostKeyDialog* dialog = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((dialog = openDialog<HostKeyDialog>()) != nullptr, 10000);
    QCOMPARE(dialog->fingerprintText(), QString::fromStdString(question().fingerprint_sha256));
    QCOMPARE(answer.load(), -1);  // still waiting for the person
    QTest::mouseClick(dialog->acceptOnceButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(answer.load(), static_cast<int>(HostKeyAnswer::kAcceptOnce), 10000);
    worker.join();

    std::optional<app::remote::Secret> secret;
    std::atomic<bool> done{false};
    std::thread asker([&] {
      secret = prompter->passphrase("/home/alice/.ssh/id_ed25519", 1);
      done = true;
    });
    PassphraseDialog* pass = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((pass = openDialog<PassphraseDialog>()) != nullptr, 10000);
    QTest::keyClicks(pass->lineEdit(), QStringLiteral("s3cret"));
    pass->accept();
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 10000);
    asker.join();
    QVERIFY(secret.has_value());
    QCOMPARE(std::strcmp(secret->c_str(), "s3cret"), 0);
  }

  void prompterShutDownRejectsWhatIsOpen() {
    auto prompter = DialogPrompter::create(nullptr);
    std::atomic<int> answer{-1};
    std::thread worker([&] { answer = static_cast<int>(prompter->hostKey(question())); });
    QTRY_VERIFY_WITH_TIMEOUT(openDialog<HostKeyDialog>() != nullptr, 10000);
    prompter->shutDown();  // as the window does before joining its workers
    QTRY_COMPARE_WITH_TIMEOUT(answer.load(), static_cast<int>(HostKeyAnswer::kReject), 10000);
    worker.join();
    openDialog<HostKeyDialog>()->close();
    // Later questions are refused at once, and so are questions on the GUI thread.
    QCOMPARE(prompter->hostKey(question()), HostKeyAnswer::kReject);
    auto fresh = DialogPrompter::create(nullptr);
    QCOMPARE(fresh->hostKey(question()), HostKeyAnswer::kReject);
    QVERIFY(!fresh->passphrase("/k", 1).has_value());
  }

  void localIsThisMachineAndOtherNamesGoThroughSsh() {
    auto hosts = HostOpenerService::create();
    auto local = hosts->open("local");
    QVERIFY(local.isOk());
    QCOMPARE(QString::fromStdString(local.value()->name()), QStringLiteral("local"));
    QCOMPARE(hosts->open("local").value().get(), local.value().get());  // one per name
    auto ssh = hosts->opener()("gpu-node-a");
    QVERIFY(!ssh.isOk());
    QVERIFY(ssh.status().message().find("gpu-node-a") != std::string::npos);
    // The factory is the one place SshHost plugs in.
    hosts->setSshFactory([local = local.value()](const std::string&) {
      return protocol::StatusOr<std::shared_ptr<app::remote::Host>>(local);
    });
    QVERIFY(hosts->open("gpu-node-a").isOk());
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RemoteDialogsTest)
#include "remote_dialogs_test.moc"

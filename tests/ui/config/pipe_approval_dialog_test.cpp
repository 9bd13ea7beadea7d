// Issue 26 item 5: the dialog that lists a config's pipe: commands before a
// launch, and the launch step around it (asked once per exact command,
// Cancel stops the launch), driven offscreen.
#include "ui/config/pipe_approval_dialog.h"

#include <QApplication>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/config/pipe_approval.h"
#include "backend/protocol/cmdline/cmdline.h"

namespace fs::ui {

namespace {

// A long command with quotes and shell syntax: it must be shown whole.
const std::string kLong = "pipe:ssh data-host 'cat /very/long/path/" + std::string(300, 'x') +
                          "/shard.tar' | zstd -d; echo \"$(whoami)\" `id` && true";

protocol::RunConfig configWith(const std::string& shards) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.data.datasets.at(0).shards = shards;
  return c;
}

// Clicks `which` of the modal PipeApprovalDialog once it is open; counts the dialogs seen.
void answerNextDialog(bool run, int* seen) {
  QTimer::singleShot(0, [run, seen] {
    auto* dialog = qobject_cast<PipeApprovalDialog*>(QApplication::activeModalWidget());
    if (dialog == nullptr) return;
    ++*seen;
    (run ? dialog->runButton() : dialog->cancelButton())->click();
  });
}

}  // namespace

class PipeApprovalDialogTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    settings_.reset(new QSettings(dir_->filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
  }

  void showsEveryCommandInFullInMonospace() {
    const auto sources =
        protocol::pipeSources(configWith("/d/a.tar::" + kLong + "::{b.tar,pipe:cat /d/{0..2}.tar}"));
    PipeApprovalDialog dialog(sources);
    const QString text = dialog.commandText()->toPlainText();
    QVERIFY2(text.contains(QString::fromStdString(kLong)), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("{b.tar,pipe:cat /d/{0..2}.tar}")));
    for (const char* c : {"cat /d/0.tar", "cat /d/1.tar", "cat /d/2.tar"})
      QVERIFY(text.contains(QLatin1String(c)));
    QVERIFY(!text.contains(QChar(0x2026)));  // nothing elided
    QVERIFY(dialog.commandText()->isReadOnly());
    QVERIFY(dialog.commandText()->lineWrapMode() != QPlainTextEdit::NoWrap);
    QCOMPARE(dialog.commandText()->font(), QFontDatabase::systemFont(QFontDatabase::FixedFont));
    QVERIFY(dialog.cancelButton()->isDefault());
    QVERIFY(!dialog.runButton()->isDefault());
    dialog.show();
    dialog.runButton()->click();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    PipeApprovalDialog other(sources);
    other.show();
    other.cancelButton()->click();
    QCOMPARE(other.result(), int(QDialog::Rejected));
  }

  void askedOncePerExactCommandAndCancelStopsTheLaunch() {
    app::PipeApprovals approvals(*settings_);
    const auto config = configWith(kLong);
    bool allowPipe = true;
    int seen = 0;
    answerNextDialog(false, &seen);
    QVERIFY(!confirmPipeLaunch(nullptr, config, {}, approvals, &allowPipe));  // Cancel: no launch
    QCOMPARE(seen, 1);
    QVERIFY(!allowPipe);
    QVERIFY(!approvals.isApproved(kLong));

    answerNextDialog(true, &seen);
    QVERIFY(confirmPipeLaunch(nullptr, config, {}, approvals, &allowPipe));
    QCOMPARE(seen, 2);
    QVERIFY(allowPipe);
    QVERIFY(approvals.isApproved(kLong));

    // The same command again: no dialog, still --allow-pipe.
    allowPipe = false;
    answerNextDialog(false, &seen);
    QVERIFY(confirmPipeLaunch(nullptr, config, {}, approvals, &allowPipe));
    QVERIFY(allowPipe);
    QCOMPARE(seen, 2);
    QCoreApplication::processEvents();

    // Changed by one character: asked again.
    answerNextDialog(false, &seen);
    QVERIFY(!confirmPipeLaunch(nullptr, configWith(kLong + " "), {}, approvals, &allowPipe));
    QCOMPARE(seen, 3);
  }

  void typedCommandsAndPlainConfigsAreNotAsked() {
    app::PipeApprovals approvals(*settings_);
    bool allowPipe = true;
    int seen = 0;
    answerNextDialog(false, &seen);
    QVERIFY(confirmPipeLaunch(nullptr, configWith("/d/{0..9}.tar"), {}, approvals, &allowPipe));
    QVERIFY(!allowPipe);  // nothing to allow
    app::ConfigDocument doc;
    QVERIFY(doc.setField("data.datasets[0].shards", "pipe:cat /mine/{0..3}.tar").isOk());
    QVERIFY(confirmPipeLaunch(nullptr, doc.config(), doc.typedPipeSources(), approvals, &allowPipe));
    QVERIFY(allowPipe);
    QCoreApplication::processEvents();
    QCOMPARE(seen, 0);
  }

  void importedCommandLineIsAsked() {
    // The s3 list of a pasted train.py line becomes a pipe: the document did not type it.
    app::ConfigDocument doc;
    doc.setConfig(protocol::importOpenFlamingoCmdline("train.py --laion_shards 's3://b/{0..1}.tar'").config);
    app::PipeApprovals approvals(*settings_);
    const auto ask = app::pipeSourcesToApprove(doc.config(), doc.typedPipeSources(), approvals);
    QCOMPARE(ask.size(), size_t{1});
    QCOMPARE(ask[0].source, std::string("pipe:aws s3 cp 's3://b/{0..1}.tar' -"));
  }

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<QSettings> settings_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::PipeApprovalDialogTest)
#include "pipe_approval_dialog_test.moc"

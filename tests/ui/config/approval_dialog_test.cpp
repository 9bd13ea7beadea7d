// Issue 26 item 5, issue 42 item 2, issue 43 item 3: the one dialog that shows
// a config's pipe: commands and launch.slurm.extra_args before a launch or a
// SLURM submit, and the step around it (confirmLaunch: asked once per exact
// text, Cancel stops the launch and stores nothing, typed texts not asked),
// driven offscreen.
#include "ui/config/approval_dialog.h"

#include <QApplication>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/config/launch_approval.h"
#include "app/config/pipe_approval.h"
#include "backend/protocol/cmdline/cmdline.h"

namespace fs::ui {

namespace {

using Scope = app::LaunchApprovals::Scope;

// A long command with quotes and shell syntax: it must be shown whole.
const std::string kLong = "pipe:ssh data-host 'cat /very/long/path/" + std::string(300, 'x') +
                          "/shard.tar' | zstd -d; echo \"$(whoami)\" `id` && true";
const std::string kBashEnv = "--export=ALL,BASH_ENV=$(touch${IFS}/tmp/CANARY)";

protocol::RunConfig configWith(const std::string& shards) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.data.datasets.at(0).shards = shards;
  return c;
}

protocol::RunConfig slurmConfigWith(const std::vector<std::string>& extraArgs) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.launch.kind = "slurm";
  c.launch.slurm.extra_args = extraArgs;
  return c;
}

std::vector<app::ApprovalItem> pipeItems(const protocol::RunConfig& config) {
  std::vector<app::ApprovalItem> out;
  for (auto& s : protocol::pipeSources(config)) {
    app::ApprovalItem item;
    item.text = s.source;
    item.field = s.field;
    item.pipe = s;
    item.ask = true;
    out.push_back(item);
  }
  return out;
}

// Clicks accept or Cancel of the modal ApprovalDialog once it is open; counts the dialogs seen
// and keeps the texts of the last.
struct Seen {
  int dialogs = 0;
  QString commands, args;
};
void answerNextDialog(bool yes, Seen* seen) {
  QTimer::singleShot(0, [yes, seen] {
    auto* dialog = qobject_cast<ApprovalDialog*>(QApplication::activeModalWidget());
    if (dialog == nullptr) return;
    ++seen->dialogs;
    seen->commands = dialog->commandText() ? dialog->commandText()->toPlainText() : QString();
    seen->args = dialog->argsText() ? dialog->argsText()->toPlainText() : QString();
    (yes ? dialog->acceptButton() : dialog->cancelButton())->click();
  });
}

}  // namespace

class ApprovalDialogTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    settings_.reset(new QSettings(dir_->filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
  }

  void showsEveryCommandInFullInMonospace() {
    const auto items = pipeItems(configWith("/d/a.tar::" + kLong + "::{b.tar,pipe:cat /d/{0..2}.tar}"));
    ApprovalDialog dialog(items);
    QVERIFY(dialog.argsText() == nullptr);
    const QString text = dialog.commandText()->toPlainText();
    QVERIFY2(text.contains(QString::fromStdString(kLong)), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("{b.tar,pipe:cat /d/{0..2}.tar}")));
    for (const char* c : {"cat /d/0.tar", "cat /d/1.tar", "cat /d/2.tar"})
      QVERIFY(text.contains(QLatin1String(c)));
    QVERIFY(!text.contains(QChar(0x2026)));  // nothing elided
    QVERIFY(dialog.commandText()->isReadOnly());
    QVERIFY(dialog.commandText()->lineWrapMode() != QPlainTextEdit::NoWrap);
    QCOMPARE(dialog.commandText()->font(), QFontDatabase::systemFont(QFontDatabase::FixedFont));
    QCOMPARE(dialog.acceptButton()->text(), QStringLiteral("Run"));
    QVERIFY(dialog.cancelButton()->isDefault());
    QVERIFY(!dialog.acceptButton()->isDefault());
    dialog.show();
    dialog.acceptButton()->click();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    ApprovalDialog other(items);
    other.show();
    other.cancelButton()->click();
    QCOMPARE(other.result(), int(QDialog::Rejected));
  }

  void showsSlurmItemsAsSbatchLinesBesideTheCommands() {
    auto items = pipeItems(configWith(kLong));
    app::ApprovalItem arg;
    arg.kind = app::ApprovalItem::Kind::kSlurmArg;
    arg.text = "--comment=a\x01z";
    arg.field = "launch.slurm.extra_args[0]";
    arg.ask = true;
    items.push_back(arg);
    ApprovalDialog dialog(items);
    QVERIFY(dialog.commandText()->toPlainText().contains(QString::fromStdString(kLong)));
    // A control character would not show: replaced (validation refuses it anyway).
    QCOMPARE(dialog.argsText()->toPlainText(), QStringLiteral("#SBATCH --comment=a\ufffdz\n"));
    QVERIFY(dialog.argsText()->isReadOnly());
    QCOMPARE(dialog.argsText()->font(), QFontDatabase::systemFont(QFontDatabase::FixedFont));
    QCOMPARE(dialog.acceptButton()->text(), QStringLiteral("Submit"));
    QVERIFY(dialog.cancelButton()->isDefault());
  }

  void askedOncePerExactCommandAndCancelStopsTheLaunch() {
    app::LaunchApprovals approvals(*settings_);
    app::PipeApprovals pipes(*settings_);
    const auto config = configWith(kLong);
    bool allowPipe = true;
    Seen seen;
    answerNextDialog(false, &seen);
    QVERIFY(!confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kLaunch, &allowPipe));  // no launch
    QCOMPARE(seen.dialogs, 1);
    QVERIFY(!allowPipe);
    QVERIFY(!pipes.isApproved(kLong));

    answerNextDialog(true, &seen);
    QVERIFY(confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kLaunch, &allowPipe));
    QCOMPARE(seen.dialogs, 2);
    QVERIFY(allowPipe);
    QVERIFY(pipes.isApproved(kLong));

    // The same command again: no dialog, still --allow-pipe.
    allowPipe = false;
    answerNextDialog(false, &seen);
    QVERIFY(confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kLaunch, &allowPipe));
    QVERIFY(allowPipe);
    QCOMPARE(seen.dialogs, 2);
    QCoreApplication::processEvents();

    // Changed by one character: asked again.
    answerNextDialog(false, &seen);
    QVERIFY(!confirmLaunch(nullptr, approvals, configWith(kLong + " "), {}, {}, Scope::kLaunch, &allowPipe));
    QCOMPARE(seen.dialogs, 3);
  }

  void typedCommandsAndPlainConfigsAreNotAsked() {
    app::LaunchApprovals approvals(*settings_);
    bool allowPipe = true;
    Seen seen;
    answerNextDialog(false, &seen);
    QVERIFY(
        confirmLaunch(nullptr, approvals, configWith("/d/{0..9}.tar"), {}, {}, Scope::kLaunch, &allowPipe));
    QVERIFY(!allowPipe);  // nothing to allow
    app::ConfigDocument doc;
    QVERIFY(doc.setField("data.datasets[0].shards", "pipe:cat /mine/{0..3}.tar").isOk());
    QVERIFY(confirmLaunch(nullptr, approvals, doc.config(), doc.typedPipeSources(), doc.typedSlurmArgs(),
                          Scope::kLaunch, &allowPipe));
    QVERIFY(allowPipe);
    QCoreApplication::processEvents();
    QCOMPARE(seen.dialogs, 0);
  }

  void importedCommandLineIsAsked() {
    // The s3 list of a pasted train.py line becomes a pipe: the document did not type it.
    app::ConfigDocument doc;
    doc.setConfig(protocol::importOpenFlamingoCmdline("train.py --laion_shards 's3://b/{0..1}.tar'").config);
    app::LaunchApprovals approvals(*settings_);
    const auto ask = approvals.check(doc.config(), doc.typedPipeSources(), {}, Scope::kLaunch).toAsk();
    QCOMPARE(ask.size(), size_t{1});
    QCOMPARE(ask[0].text, std::string("pipe:aws s3 cp 's3://b/{0..1}.tar' -"));
  }

  void slurmItemsAskedOnceEachAndCancelStopsTheSubmit() {
    app::LaunchApprovals approvals(*settings_);
    app::PipeApprovals slurm(*settings_, app::PipeApprovals::kSlurmArgsKey);
    const auto config = slurmConfigWith({"--mem=8G", kBashEnv});
    bool allowPipe = true;
    Seen seen;
    answerNextDialog(false, &seen);
    QVERIFY(!confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kSlurmSubmit, &allowPipe));
    QCOMPARE(seen.dialogs, 1);
    QVERIFY2(seen.args.contains(QStringLiteral("#SBATCH --mem=8G\n")), qPrintable(seen.args));
    QVERIFY2(seen.args.contains(QString::fromStdString("#SBATCH " + kBashEnv)), qPrintable(seen.args));
    QCOMPARE(slurm.size(), std::size_t{0});

    answerNextDialog(true, &seen);
    QVERIFY(confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kSlurmSubmit, &allowPipe));
    QCOMPARE(seen.dialogs, 2);
    QVERIFY(!allowPipe);  // no pipe: sources in this config
    QVERIFY(confirmLaunch(nullptr, approvals, config, {}, {}, Scope::kSlurmSubmit, &allowPipe));
    QCOMPARE(seen.dialogs, 2);  // approved: not asked again
    answerNextDialog(false, &seen);
    QVERIFY(!confirmLaunch(nullptr, approvals, slurmConfigWith({"--mem=8G", kBashEnv + " "}), {}, {},
                           Scope::kSlurmSubmit, &allowPipe));
    QCOMPARE(seen.dialogs, 3);  // a changed item asks again, and only it is shown
    QVERIFY2(!seen.args.contains(QStringLiteral("--mem=8G")), qPrintable(seen.args));
  }

  void typedSlurmItemsAndALocalLaunchAreNotAskedAbout() {
    app::LaunchApprovals approvals(*settings_);
    bool allowPipe = false;
    Seen seen;
    answerNextDialog(false, &seen);
    QVERIFY(confirmLaunch(nullptr, approvals, slurmConfigWith({"--mem=8G"}), {}, {"--mem=8G"},
                          Scope::kSlurmSubmit, &allowPipe));
    QVERIFY(confirmLaunch(nullptr, approvals, slurmConfigWith({}), {}, {}, Scope::kSlurmSubmit, &allowPipe));
    // Not a SLURM submit: extra_args are not part of the launch.
    QVERIFY(
        confirmLaunch(nullptr, approvals, slurmConfigWith({kBashEnv}), {}, {}, Scope::kLaunch, &allowPipe));
    QCoreApplication::processEvents();  // the pending answer finds no dialog
    QCOMPARE(seen.dialogs, 0);
  }

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<QSettings> settings_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::ApprovalDialogTest)
#include "approval_dialog_test.moc"

// Issue 42 item 2: the step before a SLURM submit that shows the config's
// launch.slurm.extra_args the user did not type (NOTE [SLURM extra args] in
// app/launch/slurm/slurm_script.h): asked once per exact item, Cancel stops the
// submit, typed items are not asked about; driven offscreen.
#include "ui/config/slurm_args_dialog.h"

#include <QApplication>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app/config/pipe_approval.h"

namespace fs::ui {

namespace {

const std::string kBashEnv = "--export=ALL,BASH_ENV=$(touch${IFS}/tmp/CANARY)";

protocol::RunConfig configWith(const std::vector<std::string>& extraArgs) {
  protocol::RunConfig c = protocol::defaultRunConfig();
  c.launch.kind = "slurm";
  c.launch.slurm.extra_args = extraArgs;
  return c;
}

// Clicks Submit or Cancel of the modal SlurmArgsDialog once it is open; counts the dialogs seen
// and keeps the text of the last.
void answerNextDialog(bool submit, int* seen, QString* text) {
  QTimer::singleShot(0, [submit, seen, text] {
    auto* dialog = qobject_cast<SlurmArgsDialog*>(QApplication::activeModalWidget());
    if (dialog == nullptr) return;
    ++*seen;
    *text = dialog->argsText()->toPlainText();
    (submit ? dialog->submitButton() : dialog->cancelButton())->click();
  });
}

}  // namespace

class SlurmArgsDialogTest : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    dir_.reset(new QTemporaryDir);
    settings_.reset(new QSettings(dir_->filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
  }

  void askedOncePerExactItemAndCancelStopsTheSubmit() {
    app::PipeApprovals approvals(*settings_, app::PipeApprovals::kSlurmArgsKey);
    const auto config = configWith({"--mem=8G", kBashEnv});
    int seen = 0;
    QString text;
    answerNextDialog(false, &seen, &text);
    QVERIFY(!confirmSlurmArgs(nullptr, config, {}, approvals));  // cancelled: no submit
    QCOMPARE(seen, 1);
    QVERIFY2(text.contains(QStringLiteral("#SBATCH --mem=8G\n")), qPrintable(text));
    QVERIFY2(text.contains(QString::fromStdString("#SBATCH " + kBashEnv)), qPrintable(text));
    QCOMPARE(approvals.size(), std::size_t{0});

    answerNextDialog(true, &seen, &text);
    QVERIFY(confirmSlurmArgs(nullptr, config, {}, approvals));
    QCOMPARE(seen, 2);
    QVERIFY(confirmSlurmArgs(nullptr, config, {}, approvals));  // approved: not asked again
    QCOMPARE(seen, 2);
    answerNextDialog(false, &seen, &text);
    QVERIFY(!confirmSlurmArgs(nullptr, configWith({"--mem=8G", kBashEnv + " "}), {}, approvals));
    QCOMPARE(seen, 3);  // a changed item asks again, and only it is shown
    QVERIFY2(!text.contains(QStringLiteral("--mem=8G")), qPrintable(text));
  }

  void typedItemsAndNoItemsAreNotAskedAbout() {
    app::PipeApprovals approvals(*settings_, app::PipeApprovals::kSlurmArgsKey);
    int seen = 0;
    QString text;
    answerNextDialog(false, &seen, &text);
    QVERIFY(confirmSlurmArgs(nullptr, configWith({"--mem=8G"}), {"--mem=8G"}, approvals));
    QVERIFY(confirmSlurmArgs(nullptr, configWith({}), {}, approvals));
    QCoreApplication::processEvents();  // the pending answer finds no dialog
    QCOMPARE(seen, 0);
  }

 private:
  std::unique_ptr<QTemporaryDir> dir_;
  std::unique_ptr<QSettings> settings_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::SlurmArgsDialogTest)
#include "slurm_args_dialog_test.moc"

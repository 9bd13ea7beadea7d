// The form's tools: paste an OpenFlamingo command line and apply it, copy the
// config as a command line (it imports back to the same config), and the
// read-only table of changes from the defaults.
#include <QDialogButtonBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QtTest>

#include "app/config/config_document.h"
#include "backend/protocol/cmdline/cmdline.h"
#include "ui/config/cmdline_dialog.h"
#include "ui/config/defaults_diff_dialog.h"

namespace fs::ui {

namespace {
const char* kLine = R"(torchrun --nnodes=1 --nproc_per_node=4 train.py \
  --lm_path anas-awadalla/mpt-1b-redpajama-200b \
  --tokenizer_path anas-awadalla/mpt-1b-redpajama-200b \
  --cross_attn_every_n_layers 1 --batch_size_mmc4 32 --batch_size_laion 64 \
  --train_num_samples_mmc4 125000 --train_num_samples_laion 250000 --loss_multiplier_laion 0.2 \
  --num_epochs 480 --warmup_steps 1875 --report_to_wandb)";

QPushButton* applyButton(CmdlineDialog& d) {
  return d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Apply);
}
}  // namespace

class ConfigToolsTest : public QObject {
  Q_OBJECT

 private slots:
  void pastedCommandLineFillsTheDocument() {
    app::ConfigDocument doc;
    CmdlineDialog dialog(&doc);
    QVERIFY(!applyButton(dialog)->isEnabled());
    dialog.input()->setPlainText(QString::fromLatin1(kLine));
    QVERIFY(applyButton(dialog)->isEnabled());
    QVERIFY(dialog.reportText().contains(QStringLiteral("Imports as a run config")));
    QVERIFY(dialog.reportText().contains(QStringLiteral("--report_to_wandb")));  // ignored, and said so
    QTest::mouseClick(applyButton(dialog), Qt::LeftButton);
    const auto expected = protocol::importOpenFlamingoCmdline(kLine).config;
    QVERIFY(doc.config() == expected);
    QCOMPARE(doc.config().model.lm.path, std::string("anas-awadalla/mpt-1b-redpajama-200b"));
    QCOMPARE(doc.config().optim.warmup_steps, int64_t{1875});
  }

  void badValuesBlockTheImportAndNameTheFlag() {
    app::ConfigDocument doc;
    const auto before = doc.config();
    CmdlineDialog dialog(&doc);
    dialog.input()->setPlainText(QStringLiteral("torchrun train.py --batch_size_mmc4 many"));
    QVERIFY(!applyButton(dialog)->isEnabled());
    QVERIFY(dialog.reportText().contains(QStringLiteral("Cannot import")));
    QVERIFY(dialog.reportText().contains(QStringLiteral("many")));
    QVERIFY(!dialog.apply());
    QVERIFY(doc.config() == before);
  }

  void copiedCommandLineImportsBackToTheSameConfig() {
    app::ConfigDocument doc;
    QVERIFY(doc.setField("optim.lr", "0.0003").isOk());
    QVERIFY(doc.setField("optim.warmup_steps", "77").isOk());
    const CmdlineCopy copy = commandLineFor(doc.config());
    QVERIFY(copy.line.startsWith(QStringLiteral("torchrun")));
    QVERIFY(copy.line.contains(QStringLiteral("77")));
    const auto back = protocol::importOpenFlamingoCmdline(copy.line.toStdString());
    QVERIFY(back.ok());
    QCOMPARE(back.config.optim.warmup_steps, int64_t{77});
    QCOMPARE(back.config.optim.lr, 0.0003);
  }

  void defaultsDiffFollowsTheDocument() {
    app::ConfigDocument doc;
    DefaultsDiffDialog dialog(&doc);
    QCOMPARE(dialog.table()->rowCount(), 0);
    QVERIFY(doc.setField("optim.warmup_steps", "77").isOk());
    QCOMPARE(dialog.table()->rowCount(), 1);
    QCOMPARE(dialog.table()->item(0, 0)->text(), QStringLiteral("optim.warmup_steps"));
    QCOMPARE(dialog.table()->item(0, 2)->text(), QStringLiteral("77"));
    QVERIFY(dialog.table()->item(0, 1)->text() != QStringLiteral("77"));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::ConfigToolsTest)
#include "config_tools_test.moc"

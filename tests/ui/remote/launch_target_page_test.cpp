// The launch target page on a ConfigDocument: the target and launch.kind follow
// each other both ways; the SSH hosts go into launch.hosts and launch.nnodes;
// "Check hosts" runs the real pre-flight on this machine (LocalHost, the
// flamingo-train built here) on the page's worker thread and shows its rows;
// the SLURM preview is makeSlurmScript's output, and edits survive config
// changes until "Reset to generated". Pictures in <build>/tests/screenshots/.
#include "ui/remote/launch_target_page.h"

#include <unistd.h>

#include <QAbstractButton>
#include <QButtonGroup>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/launch/slurm/slurm_script.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/preflight_table_view.h"
#include "ui/remote/slurm_target_panel.h"
#include "ui/remote/ssh_target_panel.h"
#include "ui/remote/string_map_editor.h"

namespace fs::ui {
namespace {

void save(QWidget* w, const QString& name) {
  QTest::qWait(50);
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

void loadTiny(app::ConfigDocument& doc) {
  QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
  doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
  QVERIFY(loaded.wait(5000));
}

QAbstractButton* targetButton(LaunchTargetPage& page, const char* kind) {
  return page.findChild<QRadioButton*>(QStringLiteral("target-") + QLatin1String(kind));
}

void addHosts(LaunchTargetPage& page, const QStringList& hosts) {
  for (const QString& h : hosts) {
    page.sshPanel()->hostPicker()->setEditText(h);
    page.sshPanel()->addHost();
  }
}

}  // namespace

class LaunchTargetPageTest : public QObject {
  Q_OBJECT

 private slots:
  void targetAndLaunchKindFollowEachOther() {
    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QCOMPARE(doc.config().launch.kind, std::string("local"));
    QVERIFY(targetButton(page, "local")->isChecked());

    // Page -> document.
    QTest::mouseClick(targetButton(page, "ssh"), Qt::LeftButton);
    QCOMPARE(doc.config().launch.kind, std::string("ssh"));
    addHosts(page, {QStringLiteral("gpu-node-a"), QStringLiteral("gpu-node-b")});
    QCOMPARE(doc.config().launch.hosts, (std::vector<std::string>{"gpu-node-a", "gpu-node-b"}));
    QCOMPARE(doc.config().launch.nnodes, 2);
    QTest::mouseClick(targetButton(page, "slurm"), Qt::LeftButton);
    QCOMPARE(doc.config().launch.kind, std::string("slurm"));
    QVERIFY(doc.config().launch.hosts.empty());  // SLURM picks the nodes
    QCOMPARE(page.sshPanel()->hosts(),
             (QStringList{QStringLiteral("gpu-node-a"), QStringLiteral("gpu-node-b")}));
    QTest::mouseClick(targetButton(page, "ssh"), Qt::LeftButton);  // the hosts come back
    QCOMPARE(doc.config().launch.hosts, (std::vector<std::string>{"gpu-node-a", "gpu-node-b"}));
    QTest::mouseClick(targetButton(page, "local"), Qt::LeftButton);
    QCOMPARE(doc.config().launch.kind, std::string("local"));
    QCOMPARE(doc.config().launch.nnodes, 1);
    QVERIFY(doc.config().launch.hosts.empty());

    // Document -> page (the config form, a loaded file).
    QVERIFY(doc.setField("launch.kind", "slurm").isOk());
    QVERIFY(targetButton(page, "slurm")->isChecked());
    QCOMPARE(page.target(), LaunchTargetPage::kSlurm);
    QVERIFY(page.slurmPanel()->isVisibleTo(&page));
    protocol::RunConfig c = doc.config();
    c.launch.kind = "ssh";
    c.launch.hosts = {"login-x", "login-y", "login-z"};
    c.launch.nnodes = 3;
    doc.setConfig(c);
    QVERIFY(targetButton(page, "ssh")->isChecked());
    QCOMPARE(page.sshPanel()->hosts(),
             (QStringList{QStringLiteral("login-x"), QStringLiteral("login-y"), QStringLiteral("login-z")}));
    QVERIFY(doc.setField("launch.kind", "external").isOk());  // no button says "local" then
    QCOMPARE(page.target(), LaunchTargetPage::kExternal);
    QCOMPARE(page.targetButtons()->checkedButton(), nullptr);
    QVERIFY(doc.setField("launch.kind", "local").isOk());
    QVERIFY(targetButton(page, "local")->isChecked());
  }

  void hostPickersOfferTheSshConfigAliases() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    QFile config(home.filePath(QStringLiteral("config")));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(
        "Host gpu-node-a gpu-node-b\n  User alice\nHost *.cluster.example.org !bastion\n  Port 2222\n"
        "Host login\n  HostName login.cluster.example.org\n");
    config.close();
    app::ConfigDocument doc;
    LaunchTargetPage page(&doc, HostOpenerService::create());
    QSignalSpy loaded(&page, &LaunchTargetPage::aliasesLoaded);
    app::remote::SshConfigOptions options;
    options.user_config = config.fileName().toStdString();
    options.system_config.clear();
    page.loadAliases(options);
    // The one from construction (the user's real files) may come first: wait for ours.
    QTRY_VERIFY_WITH_TIMEOUT(page.sshPanel()->hostPicker()->findText(QStringLiteral("gpu-node-b")) >= 0,
                             5000);
    QVERIFY(!loaded.isEmpty());
    QComboBox* picker = page.sshPanel()->hostPicker();
    QStringList entries;
    for (int i = 0; i < picker->count(); ++i) entries << picker->itemText(i);
    QCOMPARE(entries, (QStringList{QStringLiteral("local"), QStringLiteral("gpu-node-a"),
                                   QStringLiteral("gpu-node-b"), QStringLiteral("login")}));

    options.user_config = home.filePath(QStringLiteral("missing/config")).toStdString();
    page.loadAliases(options);  // a missing file is an empty one
    QTRY_COMPARE_WITH_TIMEOUT(picker->count(), 1, 5000);
  }

  void checkHostsRunsThePreflightOnThisMachine() {
    QTemporaryDir root;
    QVERIFY(root.isValid());
    app::ConfigDocument doc;
    loadTiny(doc);
    // A port of this process's own: tests run in parallel.
    QVERIFY(doc.setField("launch.master_port", std::to_string(20000 + getpid() % 20000)).isOk());
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.resize(1100, 760);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::mouseClick(targetButton(page, "ssh"), Qt::LeftButton);
    page.engineEdit()->setText(QStringLiteral(FS_TEST_FLAMINGO_TRAIN));
    page.remoteRootEdit()->setText(root.path());
    emit page.remoteRootEdit()->editingFinished();
    QCOMPARE(QString::fromStdString(doc.config().launch.remote_workdir), root.path());

    addHosts(page, {QStringLiteral("local"), QStringLiteral("gpu-node-b.cluster.example.org")});
    save(&page, QStringLiteral("launch_target_ssh.png"));

    // A host that cannot be reached: its row says why, naming it.
    QTest::mouseClick(page.sshPanel()->checkButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!page.sshPanel()->isChecking(), 60000);
    PreflightTableView* view = page.sshPanel()->preflightView();
    QVERIFY(!view->table().ok());
    QVERIFY2(view->actionsText().contains(QStringLiteral("gpu-node-b.cluster.example.org")),
             qPrintable(view->actionsText()));
    save(view, QStringLiteral("preflight_table_unreachable.png"));

    // This machine alone: the real checks, each row shown.
    page.sshPanel()->setHosts({QStringLiteral("local")});
    QTest::mouseClick(page.sshPanel()->checkButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!page.sshPanel()->isChecking(), 120000);
    const auto& table = view->table();
    QCOMPARE(static_cast<int>(table.rows.size()), 5);  // engine, disk, resources, clock, rendezvous
    QTableWidget* t = view->tableWidget();
    QCOMPARE(t->rowCount(), 5);
    for (int r = 0; r < 5; ++r) {
      const auto& row = table.rows[static_cast<std::size_t>(r)];
      QCOMPARE(t->item(r, PreflightTableView::kCheck)->text(),
               QString::fromStdString(std::string(app::cluster::toString(row.check))));
      QCOMPARE(t->item(r, PreflightTableView::kStatus)->text(),
               QString::fromStdString(std::string(app::cluster::toString(row.status))));
      QCOMPARE(t->item(r, PreflightTableView::kValue)->text(), QString::fromStdString(row.value));
    }
    const auto* engine = table.find(0, app::cluster::CheckKind::kEngine);
    QVERIFY(engine != nullptr);
#ifdef FS_TEST_ENGINE
    QVERIFY2(engine->status == app::cluster::CheckStatus::kOk, engine->action.c_str());
#endif
    const auto* disk = table.find(0, app::cluster::CheckKind::kDisk);
    QVERIFY(disk != nullptr && disk->value.find(root.path().toStdString()) != std::string::npos);
    save(view, QStringLiteral("preflight_table.png"));
    save(&page, QStringLiteral("launch_target_preflight.png"));
  }

  void cancellingACheckStopsIt() {
    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::mouseClick(targetButton(page, "ssh"), Qt::LeftButton);
    page.engineEdit()->setText(QStringLiteral(FS_TEST_FLAMINGO_TRAIN));
    addHosts(page, {QStringLiteral("local")});
    // Hold the worker so that the cancel comes before the check starts, every time.
    QSemaphore hold;
    RemoteWorker* worker = page.remoteWorker();
    QMetaObject::invokeMethod(worker, [&hold] { hold.acquire(); });
    QTest::mouseClick(page.sshPanel()->checkButton(), Qt::LeftButton);
    QVERIFY(page.sshPanel()->isChecking());
    page.sshPanel()->cancelCheck();
    hold.release();
    QTRY_VERIFY_WITH_TIMEOUT(!page.sshPanel()->isChecking(), 120000);
    QVERIFY2(page.sshPanel()->stateLabel()->text().contains(QStringLiteral("cancelled")),
             qPrintable(page.sshPanel()->stateLabel()->text()));
    QVERIFY(page.sshPanel()->preflightView()->table().rows.empty());
  }

  void slurmPreviewIsTheGeneratedScriptAndKeepsEdits() {
    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.resize(1000, 820);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::mouseClick(targetButton(page, "slurm"), Qt::LeftButton);
    page.remoteRootEdit()->setText(QStringLiteral("/scratch/alice/flamingo-runs"));
    emit page.remoteRootEdit()->editingFinished();
    page.engineEdit()->setText(QStringLiteral("/opt/flamingo/bin/flamingo-train"));
    QVERIFY(doc.setField("launch.slurm.partition", "gpu-a100").isOk());
    QVERIFY(doc.setField("launch.slurm.account", "vision-lab").isOk());
    QVERIFY(doc.setField("launch.slurm.time_limit", "1-00:00:00").isOk());
    QVERIFY(doc.setField("launch.slurm.gpus_per_node", "4").isOk());
    QVERIFY(doc.setField("launch.slurm.cpus_per_task", "8").isOk());

    SlurmTargetPanel* panel = page.slurmPanel();
    auto expected = app::cluster::makeSlurmScript(doc.config(), panel->spec());
    QVERIFY2(expected.isOk(), expected.status().message().c_str());
    QCOMPARE(panel->script(), QString::fromStdString(expected.value()));
    QVERIFY(panel->script().contains(QStringLiteral("gpu-a100")));
    QVERIFY(QString::fromStdString(panel->spec().run_dir)
                .startsWith(QStringLiteral("/scratch/alice/flamingo-runs/tiny-")));
    QVERIFY(panel->submitButton()->isEnabled());
    save(&page, QStringLiteral("launch_target_slurm.png"));

    // The user's edit is kept through config changes...
    QTextCursor end = panel->preview()->textCursor();
    end.movePosition(QTextCursor::End);
    panel->preview()->setTextCursor(end);
    panel->preview()->insertPlainText(QStringLiteral("# checked by alice\n"));
    QVERIFY(panel->isEdited());
    QVERIFY(doc.setField("launch.slurm.partition", "gpu-h100").isOk());
    QVERIFY(panel->script().contains(QStringLiteral("# checked by alice")));
    QVERIFY(panel->script().contains(QStringLiteral("gpu-a100")));
    // ...until Reset to generated.
    panel->resetToGenerated();
    QVERIFY(!panel->isEdited());
    auto regenerated = app::cluster::makeSlurmScript(doc.config(), panel->spec());
    QVERIFY(regenerated.isOk());
    QCOMPARE(panel->script(), QString::fromStdString(regenerated.value()));
    QVERIFY(panel->script().contains(QStringLiteral("gpu-h100")));
  }

  // launch.env on the Launch tab: one table for every target, bound to the document both ways,
  // the summary quoting each NAME=VALUE; the SLURM preview exports them.
  // Issue 42 item 1: the SLURM run directory is made from the sanitized name, as every other
  // launch path makes it, never the raw one ("::", "pipe:" and line breaks stay out of the script).
  void slurmRunDirectoryUsesTheSanitizedName() {
    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    QTest::mouseClick(targetButton(page, "slurm"), Qt::LeftButton);
    page.remoteRootEdit()->setText(QStringLiteral("/scratch/runs"));
    emit page.remoteRootEdit()->editingFinished();
    QVERIFY(doc.setFieldValue("name", std::string("x::pipe:touch /tmp/CANARY;\nnext")).isOk());
    const QString dir = page.slurmRunDir();
    QVERIFY2(dir.startsWith(QStringLiteral("/scratch/runs/x__pipe_touch__tmp_CANARY__next-")),
             qPrintable(dir));
  }

  void launchEnvIsEditedOnTheLaunchTab() {
    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.resize(1000, 900);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    StringMapEditor* env = page.envEditor();
    QCOMPARE(page.findChild<StringMapEditor*>(QStringLiteral("field:launch.env")), env);
    auto* summary = page.findChild<QLabel*>(QStringLiteral("summary:launch.env"));
    QVERIFY(summary != nullptr);
    QCOMPARE(summary->text(), QStringLiteral("none"));

    env->addEntry(QStringLiteral("OPENBLAS_CORETYPE"), QStringLiteral("Haswell"));
    env->addEntry(QStringLiteral("NOTE"), QStringLiteral("two words"));
    QCOMPARE(doc.config().launch.env,
             (protocol::StringMap{{"NOTE", "two words"}, {"OPENBLAS_CORETYPE", "Haswell"}}));
    QCOMPARE(summary->text(), QStringLiteral("'NOTE=two words' OPENBLAS_CORETYPE=Haswell"));
    for (const char* kind : {"ssh", "slurm", "local"}) {
      QTest::mouseClick(targetButton(page, kind), Qt::LeftButton);
      QVERIFY2(env->isVisible(), kind);  // every target's ranks get it
    }
    QTest::mouseClick(targetButton(page, "slurm"), Qt::LeftButton);
    QVERIFY2(page.slurmPanel()->script().contains(QStringLiteral("export NOTE='two words'\n"
                                                                 "export OPENBLAS_CORETYPE=Haswell\n")),
             qPrintable(page.slurmPanel()->script()));
    save(&page, QStringLiteral("launch_target_env.png"));

    // A file loaded elsewhere (or the config form) shows here.
    protocol::RunConfig c = doc.config();
    c.launch.env = {{"OMP_PROC_BIND", "close"}};
    doc.setConfig(c);
    QCOMPARE(env->map(), (protocol::StringMap{{"OMP_PROC_BIND", "close"}}));
    QCOMPARE(summary->text(), QStringLiteral("OMP_PROC_BIND=close"));
  }

  void submitHandsTheEditedScriptToSbatch() {
    // sbatch on this machine (the login node is "local"): a stand-in printing a
    // job id as `sbatch --parsable` does; the script it gets is the one shown.
    QTemporaryDir bin, runs;
    QVERIFY(bin.isValid() && runs.isValid());
    QFile sbatch(bin.filePath(QStringLiteral("sbatch")));
    QVERIFY(sbatch.open(QIODevice::WriteOnly));
    sbatch.write("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/sbatch.args\"\necho 4242\n");
    sbatch.close();
    QVERIFY(sbatch.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
    const QByteArray oldPath = qgetenv("PATH");
    qputenv("PATH", bin.path().toUtf8() + ':' + oldPath);

    app::ConfigDocument doc;
    loadTiny(doc);
    LaunchTargetPage page(&doc, HostOpenerService::create());
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::mouseClick(targetButton(page, "slurm"), Qt::LeftButton);
    page.remoteRootEdit()->setText(runs.path());
    emit page.remoteRootEdit()->editingFinished();
    QCOMPARE(doc.errorCount(), 0);
    SlurmTargetPanel* panel = page.slurmPanel();
    QTextCursor end = panel->preview()->textCursor();
    end.movePosition(QTextCursor::End);
    panel->preview()->setTextCursor(end);
    panel->preview()->insertPlainText(QStringLiteral("# edited before submitting\n"));
    const QString runDir = page.slurmRunDir();
    QVERIFY(runDir.startsWith(runs.path()));

    const QString shown = panel->script();
    QSignalSpy submitted(&page, &LaunchTargetPage::slurmSubmitted);
    QTest::mouseClick(panel->submitButton(), Qt::LeftButton);
    QVERIFY(submitted.wait(20000));
    QCOMPARE(submitted.at(0).at(0).toString(), QStringLiteral("local"));
    QCOMPARE(submitted.at(0).at(1).toString(), QStringLiteral("4242"));
    QCOMPARE(submitted.at(0).at(2).toString(), runDir);
    QFile script(runDir + QStringLiteral("/slurm.sbatch"));
    QVERIFY(script.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(script.readAll()), shown);
    QVERIFY(shown.contains(QStringLiteral("# edited before submitting")));
    QFile args(bin.filePath(QStringLiteral("sbatch.args")));
    QVERIFY(args.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(args.readAll()).trimmed(),
             QStringLiteral("--parsable ") + runDir + QStringLiteral("/slurm.sbatch"));
    QVERIFY(QFile::exists(runDir + QStringLiteral("/config.yaml")));
    QVERIFY(page.slurmRunDir() != runDir);  // the next job gets a directory of its own
    QVERIFY(!panel->isEdited());
    QVERIFY(panel->script().contains(page.slurmRunDir()));
    qputenv("PATH", oldPath);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::LaunchTargetPageTest)
#include "launch_target_page_test.moc"

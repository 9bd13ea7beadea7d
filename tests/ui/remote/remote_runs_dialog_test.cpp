// RemoteRunsDialog on "local" (LocalHost): a temporary run root with two runs
// (run.json from protocol::writeManifest, one with a launch.json) is listed on the
// worker thread; the table shows them, a double-click asks to attach the run's
// directory; a missing root says so; the ssh config's aliases are offered.
// Writes <build>/tests/screenshots/remote_runs_browser.png.
#include "ui/remote/remote_runs_dialog.h"

#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <filesystem>

#include "app/remote/local_host.h"
#include "backend/protocol/wire/events.h"
#include "backend/protocol/wire/launch_record.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::ui {
namespace {

constexpr int kWaitMs = 20'000;  // a hang guard

void save(QWidget* w, const QString& name) {
  QTest::qWait(50);
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

void makeRun(const std::filesystem::path& dir, protocol::RunState state, protocol::LauncherKind launcher,
             int world, std::int64_t created) {
  std::filesystem::create_directories(dir);
  protocol::RunManifest m;
  m.run_id = dir.filename().string();
  m.created = created;
  m.updated = created;
  m.world_size = world;
  m.nnodes = world > 1 ? 2 : 1;
  m.nproc_per_node = world > 1 ? world / 2 : 1;
  m.launcher = launcher;
  m.state = state;
  QVERIFY(protocol::writeManifest(dir, m).isOk());
}

}  // namespace

class RemoteRunsDialogTest : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  app::remote::SshConfigOptions sshConfig() {
    app::remote::SshConfigOptions o;
    o.user_config = (tmp_.path() + QStringLiteral("/ssh_config")).toStdString();
    o.system_config = "";
    return o;
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QFile f(tmp_.path() + QStringLiteral("/ssh_config"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("Host gpu-a\n  HostName 10.0.0.1\nHost gpu-b\n  HostName 10.0.0.2\nHost *\n  User x\n");
  }

  void listsAndAttaches() {
    const std::filesystem::path root = tmp_.path().toStdString() + "/runs";
    const std::int64_t now = protocol::unixMillisNow();
    makeRun(root / "flamingo-3b-laion", protocol::RunState::kRunning, protocol::LauncherKind::kSsh, 4, now);
    makeRun(root / "flamingo-9b-eval", protocol::RunState::kFinished, protocol::LauncherKind::kLocal, 1,
            now - 3'600'000);
    protocol::LaunchRecord r;
    r.launcher = protocol::LauncherKind::kSsh;
    r.run_dir = (root / "flamingo-3b-laion").string();
    r.created = now;
    for (int i = 0; i < 2; ++i) {
      protocol::LaunchedNode n;
      n.node_rank = i;
      n.host = i == 0 ? "gpu-a" : "gpu-b";
      n.address = n.host;
      n.agent_pid = 4242 + i;
      n.boot_id = "0c5d1c1e-0000-4000-8000-000000000000";
      n.start_ticks = 1000 + i;
      n.started = now;
      r.nodes.push_back(n);
    }
    QVERIFY(protocol::validateLaunchRecord(r).isOk());
    app::remote::LocalHost local;
    QVERIFY(local.writeFileAtomic(r.run_dir + "/launch.json", protocol::encodeLaunchRecord(r)).isOk());

    RemoteRunsDialog dialog(HostOpenerService::create(), nullptr, sshConfig());
    dialog.show();
    QTRY_COMPARE_WITH_TIMEOUT(dialog.hostField()->count(), 3, kWaitMs);  // local, gpu-a, gpu-b
    QCOMPARE(dialog.hostField()->itemText(1), QStringLiteral("gpu-a"));
    QVERIFY(!dialog.attachButton()->isEnabled());

    dialog.hostField()->setCurrentText(QStringLiteral("local"));
    dialog.rootField()->setText(QString::fromStdString(root.string()));
    QSignalSpy listed(&dialog, &RemoteRunsDialog::listed);
    QTest::mouseClick(dialog.listButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(listed.count(), 1, kWaitMs);
    QTreeWidget* t = dialog.table();
    QCOMPARE(t->topLevelItemCount(), 2);
    QStringList names;
    for (int i = 0; i < 2; ++i) names << t->topLevelItem(i)->text(0);
    QVERIFY2(names.contains(QStringLiteral("flamingo-3b-laion")), qPrintable(names.join(',')));
    QTreeWidgetItem* ssh = t->findItems(QStringLiteral("flamingo-3b-laion"), Qt::MatchExactly).value(0);
    QVERIFY(ssh != nullptr);
    QCOMPARE(ssh->text(1), QStringLiteral("running"));
    QCOMPARE(ssh->text(2), QStringLiteral("ssh"));
    QCOMPARE(ssh->text(3), QStringLiteral("4"));
    QCOMPARE(ssh->text(5), QStringLiteral("gpu-a, gpu-b"));
    QTreeWidgetItem* plain = t->findItems(QStringLiteral("flamingo-9b-eval"), Qt::MatchExactly).value(0);
    QVERIFY(plain != nullptr);
    QCOMPARE(plain->text(1), QStringLiteral("finished"));
    QCOMPARE(plain->text(5), QString());
    t->setCurrentItem(ssh);
    save(&dialog, QStringLiteral("remote_runs_browser.png"));

    QSignalSpy attach(&dialog, &RemoteRunsDialog::attachRequested);
    const QRect rect = t->visualItemRect(ssh);
    QTest::mousePress(t->viewport(), Qt::LeftButton, {}, rect.center());
    QTest::mouseDClick(t->viewport(), Qt::LeftButton, {}, rect.center());
    QTest::mouseRelease(t->viewport(), Qt::LeftButton, {}, rect.center());
    QCOMPARE(attach.count(), 1);
    QCOMPARE(attach.at(0).at(0).toString(), QStringLiteral("local"));
    QCOMPARE(attach.at(0).at(1).toString(), QString::fromStdString(r.run_dir));
    t->setCurrentItem(plain);
    QTest::mouseClick(dialog.attachButton(), Qt::LeftButton);
    QCOMPARE(attach.count(), 2);
    QCOMPARE(attach.at(1).at(1).toString(), plain->data(0, Qt::UserRole).toString());
  }

  void missingRootSaysSo() {
    RemoteRunsDialog dialog(HostOpenerService::create(), nullptr, sshConfig());
    dialog.hostField()->setCurrentText(QStringLiteral("local"));
    const QString root = tmp_.path() + QStringLiteral("/no-such-root");
    dialog.rootField()->setText(root);
    QSignalSpy listed(&dialog, &RemoteRunsDialog::listed);
    dialog.listRuns();
    QVERIFY(dialog.listing());
    QTRY_COMPARE_WITH_TIMEOUT(listed.count(), 1, kWaitMs);
    const auto scan = listed.at(0).at(0).value<app::cluster::RemoteRunScan>();
    QVERIFY(!scan.error.isEmpty());
    QCOMPARE(dialog.table()->topLevelItemCount(), 0);
    QVERIFY(dialog.listButton()->isEnabled());
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RemoteRunsDialogTest)
#include "remote_runs_dialog_test.moc"

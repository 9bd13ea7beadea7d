// The window's SLURM Submit through a login node over SSH: the launch target
// page with a HostOpenerService on the fixture's ssh config (tests/fixtures/
// ssh_hosts.h), login host h0, whose sessions carry SLURM_CONF of a private
// cluster (tests/fixtures/slurm_cluster.h) listening on the hosts' bridge.
// The job reaches the cluster with the script the page showed, byte for byte,
// and the run directory holds config.yaml and slurm.sbatch.
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/remote/local_host.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/slurm_cluster.h"
#include "tests/fixtures/ssh_hosts.h"
#include "ui/remote/host_opener_service.h"
#include "ui/remote/launch_target_page.h"
#include "ui/remote/slurm_target_panel.h"

namespace fs::ui {

class SlurmLoginNodeTest : public QObject {
  Q_OBJECT

 private slots:
  void submitThroughALoginNode() {
    fs::testing::SshHosts hosts(2);
    if (!hosts.ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts.error());
    fs::testing::SlurmCluster cluster(hosts.rootAddress());
    if (!cluster.ok()) FS_QT_FIXTURE_UNAVAILABLE("slurm cluster: " + cluster.error());
    if (!hosts.setSessionEnvironment(0, {"SLURM_CONF=" + cluster.confPath()}))
      FS_QT_FIXTURE_UNAVAILABLE("login node: " + hosts.error());
    QTemporaryDir runs(QStringLiteral("/tmp/fs-slurm-login-XXXXXX"));
    QVERIFY(runs.isValid());

    app::ConfigDocument doc;
    QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
    doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
    QVERIFY(loaded.wait(5000));
    app::remote::SshConfigOptions options;
    options.user_config = hosts.configPath();
    options.system_config.clear();
    LaunchTargetPage page(&doc, HostOpenerService::create(sshHostFactory(nullptr, options)));
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::mouseClick(page.findChild<QRadioButton*>(QStringLiteral("target-slurm")), Qt::LeftButton);
    page.remoteRootEdit()->setText(runs.path());
    emit page.remoteRootEdit()->editingFinished();
    QCOMPARE(doc.errorCount(), 0);
    SlurmTargetPanel* panel = page.slurmPanel();
    auto* login = panel->findChild<QComboBox*>(QStringLiteral("loginHost"));
    QVERIFY(login);
    login->setEditText(QString::fromStdString(hosts.alias(0)));
    const QString runDir = page.slurmRunDir();
    QVERIFY(runDir.startsWith(runs.path()));
    const QString shown = panel->script();

    QSignalSpy submitted(&page, &LaunchTargetPage::slurmSubmitted);
    QSignalSpy failed(panel, &SlurmTargetPanel::submitFailed);
    QTest::mouseClick(panel->submitButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(submitted.count() == 1 || failed.count() == 1, 120'000);
    QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
    QCOMPARE(submitted.at(0).at(0).toString(), QString::fromStdString(hosts.alias(0)));
    QCOMPARE(submitted.at(0).at(2).toString(), runDir);
    const std::string id = submitted.at(0).at(1).toString().toStdString();

    // What sbatch received on the login node is what the page showed.
    app::remote::LocalHost local;
    auto sent = local.run(cluster.command({"scontrol", "write", "batch_script", id, "-"}));
    QVERIFY2(sent.isOk() && sent->exit_code == 0, sent.isOk() ? sent->err.c_str() : "scontrol");
    QCOMPARE(QString::fromStdString(sent->out), shown);
    QVERIFY(QFile::exists(runDir + QStringLiteral("/config.yaml")));
    QFile script(runDir + QStringLiteral("/slurm.sbatch"));
    QVERIFY(script.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(script.readAll()), shown);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::SlurmLoginNodeTest)
#include "slurm_login_node_test.moc"

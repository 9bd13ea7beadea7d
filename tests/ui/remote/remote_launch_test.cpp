// The window's Launch uses the launcher of launch.kind: a config with
// launch.kind=ssh goes to the SSH launcher — which fails naming a host that
// cannot be reached — and never starts locally: no run directory
// appears under the local run root and the local launcher stays idle. An
// external config starts nothing from the Launch action either.
#include <QDir>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "app/config/config_document.h"
#include "app/launch/local_launcher.h"
#include "app/launch/ssh/ssh_launcher.h"
#include "ui/main_window.h"
#include "ui/remote/launch_dispatcher.h"
#include "ui/remote/launch_target_page.h"
#include "ui/runs/runs_panel.h"

namespace fs::ui {

class RemoteLaunchTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(work_.isValid());
    QVERIFY(QDir::setCurrent(work_.path()));
  }

  void sshConfigNeverStartsLocally() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    window.runsPanel()->setAutoRefreshSeconds(0);
    QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
    doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
    QVERIFY(loaded.wait(5000));
    const QString localRoot = work_.filePath(QStringLiteral("local-runs"));
    QVERIFY(doc.setField("run_root", localRoot.toStdString()).isOk());
    window.launchTargetPage()->setTarget(LaunchTargetPage::kSsh);
    QVERIFY(
        doc.setFieldValue("launch.hosts", protocol::Value(std::vector<std::string>{"gpu-node-a"})).isOk());
    QCOMPARE(doc.config().launch.kind, std::string("ssh"));
    QCOMPARE(doc.config().launch.nnodes, 1);
    QVERIFY2(doc.errorCount() == 0, qPrintable(QString::number(doc.errorCount())));

    QSignalSpy sshFailed(window.launchDispatcher()->sshLauncher(), &app::Launcher::failed);
    QSignalSpy localState(window.launcher(), &app::Launcher::stateChanged);
    window.launch();
    QVERIFY(sshFailed.wait(60000));  // a name the resolver does not know (maybe after its timeout)
    const QString message = sshFailed.takeFirst().at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("gpu-node-a")), qPrintable(message));
    QCOMPARE(localState.count(), 0);
    QCOMPARE(window.launcher()->state(), app::LaunchState::kIdle);
    QVERIFY(!QDir(localRoot).exists() || QDir(localRoot).isEmpty());

    window.resize(1280, 820);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.tabs()->setCurrentWidget(window.launchTargetPage());
    QTest::qWait(50);
    const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
    QVERIFY(QDir().mkpath(dir));
    QVERIFY(window.grab().save(dir + QStringLiteral("/main_window_launch.png")));
  }

  void externalStartsNothingFromLaunch() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    window.runsPanel()->setAutoRefreshSeconds(0);
    QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
    doc.loadFile(QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"));
    QVERIFY(loaded.wait(5000));
    const QString localRoot = work_.filePath(QStringLiteral("local-runs-2"));
    QVERIFY(doc.setField("run_root", localRoot.toStdString()).isOk());
    QVERIFY(doc.setField("launch.kind", "external").isOk());
    QSignalSpy localState(window.launcher(), &app::Launcher::stateChanged);
    QSignalSpy sshState(window.launchDispatcher()->sshLauncher(), &app::Launcher::stateChanged);
    window.launch();
    QVERIFY(window.statusBar()->currentMessage().contains(QStringLiteral("external")));
    QCOMPARE(window.tabs()->currentWidget(), window.launchTargetPage());

    QTest::qWait(200);
    QCOMPARE(localState.count(), 0);
    QCOMPARE(sshState.count(), 0);
    QVERIFY(!QDir(localRoot).exists());
  }

 private:
  QTemporaryDir work_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RemoteLaunchTest)
#include "remote_launch_test.moc"

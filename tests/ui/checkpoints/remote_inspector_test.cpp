// CheckpointInspector on a checkpoint of another host (openRemote), against a
// real sshd (tests/fixtures/ssh_hosts) whose file system is this machine's,
// offscreen: the title reads "h0:/path", the line under it the bytes fetched
// of the file's size; a tensor's statistics and the Training state tab come
// as for a local open; a remote run directory offers its checkpoints in the
// picker and opening another of them stays on the host.
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTreeView>
#include <QtTest>

#include "app/checkpoints/inspector_worker.h"
#include "app/remote/ssh_host.h"
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/fixtures/ssh_host_open.h"
#include "tests/fixtures/ssh_hosts.h"
#include "ui/checkpoints/checkpoint_inspector.h"
#include "ui/checkpoints/module_tree_model.h"
#include "ui/checkpoints/training_state_view.h"

namespace fs::ui {
namespace {}  // namespace

class RemoteInspectorTest : public QObject {
  Q_OBJECT

 private slots:
  void opensOverSshAndShowsWhatALocalOpenShows() {
    fs::testing::SshHosts hosts;
    if (!hosts.ok()) FS_QT_FIXTURE_UNAVAILABLE("sshd hosts in network namespaces: " + hosts.error());
    const QString dir = QString::fromStdString(hosts.dir()) + QStringLiteral("/run");
    QVERIFY(QDir().mkpath(dir));
    QProcess make;
    make.setProcessChannelMode(QProcess::MergedChannels);
    make.start(QStringLiteral(FS_PYTHON),
               {QStringLiteral(FS_SOURCE_DIR "/tests/backend/inspect/make_checkpoints.py"), dir});
    QVERIFY2(make.waitForFinished(300000) && make.exitCode() == 0, make.readAll().constData());
    // A run directory: two checkpoints, step 4 the newer.
    QVERIFY(
        QFile::copy(dir + QStringLiteral("/openflamingo.pt"), dir + QStringLiteral("/checkpoint_step2.pt")));
    QVERIFY(QFile::copy(dir + QStringLiteral("/openflamingo_train.pt"),
                        dir + QStringLiteral("/checkpoint_step4.pt")));
    {
      QFile older(dir + QStringLiteral("/checkpoint_step2.pt"));
      QVERIFY(older.open(QIODevice::ReadWrite));
      QVERIFY(
          older.setFileTime(QDateTime::currentDateTime().addSecs(-3600), QFileDevice::FileModificationTime));
    }

    auto opened = fs::testing::openFixtureHost(hosts, "h0");
    QVERIFY2(opened.isOk(), opened.status().message().c_str());
    std::shared_ptr<app::remote::Host> host = opened.value();

    CheckpointInspector inspector;
    inspector.worker()->setCacheDir(QString::fromStdString(hosts.dir()) + QStringLiteral("/cache"));
    inspector.resize(1200, 750);
    inspector.show();
    QSignalSpy done(&inspector, &CheckpointInspector::opened);
    QSignalSpy failed(&inspector, &CheckpointInspector::failed);
    inspector.openRemote(host, dir);
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty() || !failed.isEmpty(), 60000);
    QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
    const QString newest = QStringLiteral("h0:") + dir + QStringLiteral("/checkpoint_step4.pt");
    QCOMPARE(done.at(0).at(0).toString(), newest);
    QCOMPARE(inspector.checkpoint()->path, newest);
    QCOMPARE(inspector.runPicker()->count(), 2);
    QVERIFY(!inspector.fetchedLabel()->isHidden());
    QVERIFY2(inspector.fetchedLabel()->text().startsWith(QStringLiteral("Over SSH from h0: ")) &&
                 inspector.fetchedLabel()->text().contains(QStringLiteral(" of ")),
             qPrintable(inspector.fetchedLabel()->text()));

    // A tensor's statistics, fetched on selection.
    ModuleTreeModel* model = inspector.treeModel();
    const QModelIndex emb =
        model->indexOf(inspect::Section::kModel, QStringLiteral("lang_encoder.model.embed_tokens.weight"));
    QVERIFY(emb.isValid());
    inspector.tree()->setCurrentIndex(emb);
    QTRY_VERIFY_WITH_TIMEOUT(inspector.lastStats().has_value(), 60000);
    QCOMPARE(inspector.lastStats()->stats.moments.count, std::uint64_t{24});

    // The training state, read over SSH when its tab is shown.
    inspector.tabs()->setCurrentWidget(inspector.trainingStateView());
    QTRY_VERIFY_WITH_TIMEOUT(inspector.trainingStateView()->hasResult(), 60000);
    QCOMPARE(inspector.trainingStateView()->paramsProxy()->rowCount(), 4);

    // The picker's other checkpoint opens on the same host.
    done.clear();
    inspector.runPicker()->setCurrentIndex(1);
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty() || !failed.isEmpty(), 60000);
    QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
    QCOMPARE(inspector.checkpoint()->path,
             QStringLiteral("h0:") + dir + QStringLiteral("/checkpoint_step2.pt"));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::RemoteInspectorTest)
#include "remote_inspector_test.moc"

// The main window's ways into the checkpoint inspector, on a fixture of
// make_checkpoints.py: a file dropped on the window, a double-click in the
// Monitor's Checkpoints list (a run's checkpoint event), and the History's
// "Inspect checkpoints" (its signal) each show the Checkpoints tab on it.
#include <QListWidget>
#include <QMimeData>
#include <QTabWidget>
#include <QUrl>
#include <QtTest>

#include "app/config/config_document.h"
#include "tests/app/checkpoints/checkpoint_fixtures.h"
#include "ui/checkpoints/checkpoint_inspector.h"
#include "ui/checkpoints/run_checkpoint_list.h"
#include "ui/history/history_view.h"
#include "ui/main_window.h"
#include "ui/monitor/monitor_page.h"

namespace fs::ui {

class InspectorWiringTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    fixtures_ = std::make_unique<test::CheckpointFixtures>();
    QVERIFY2(fixtures_->ok(), qPrintable(fixtures_->error()));
    QVERIFY(work_.isValid());
    QVERIFY(QDir::setCurrent(work_.path()));  // the window's run root: an empty directory
  }

  void everyWayInOpensTheInspector() {
    app::ConfigDocument doc;
    MainWindow window(&doc);
    CheckpointInspector* inspector = window.checkpointInspector();
    QVERIFY(inspector);
    QVERIFY(window.acceptDrops());

    // A drop on the window.
    const QString dropped = fixtures_->path(QStringLiteral("state_dict.bin"));
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(dropped)});
    QDragEnterEvent enter(QPoint(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &drop);
    QVERIFY(drop.isAccepted());
    QCOMPARE(window.tabs()->currentWidget(), inspector);
    QTRY_VERIFY(inspector->checkpoint() && inspector->checkpoint()->path == dropped);

    // The Monitor's list of the followed run's checkpoints.
    RunCheckpointList* list = window.monitorPage()->checkpointList();
    list->reset(QFileInfo(fixtures_->path(QStringLiteral("ours.pt"))).absolutePath());
    protocol::CheckpointEvent event;
    event.path = "ours.pt";
    event.step = 7;
    event.kind = protocol::CheckpointKind::kStep;
    list->add(event);
    QCOMPARE(list->count(), 1);
    window.tabs()->setCurrentWidget(window.monitorPage());
    emit list->itemActivated(list->item(0));
    QCOMPARE(window.tabs()->currentWidget(), inspector);
    QTRY_VERIFY(inspector->checkpoint() &&
                inspector->checkpoint()->path == fixtures_->path(QStringLiteral("ours.pt")));

    // A remote run's list (the Monitor names it "host:/dir") names its checkpoints on that host.
    QCOMPARE(RunCheckpointList::pathOf(QStringLiteral("h0:/scratch/run"), QStringLiteral("checkpoint_1.pt")),
             QStringLiteral("h0:/scratch/run/checkpoint_1.pt"));
    QCOMPARE(RunCheckpointList::pathOf(QStringLiteral("h0:/scratch/run"), QStringLiteral("/elsewhere/c.pt")),
             QStringLiteral("/elsewhere/c.pt"));
    QCOMPARE(RunCheckpointList::pathOf(QStringLiteral("/runs/a"), QStringLiteral("checkpoint_1.pt")),
             QStringLiteral("/runs/a/checkpoint_1.pt"));

    // History's context menu action.
    emit window.historyView()->inspectCheckpoints(fixtures_->path(QStringLiteral("sharded")));
    QTRY_VERIFY(inspector->checkpoint() &&
                inspector->checkpoint()->format == QStringLiteral("flamingo-studio sharded checkpoint"));
  }

 private:
  std::unique_ptr<test::CheckpointFixtures> fixtures_;
  QTemporaryDir work_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::InspectorWiringTest)
#include "inspector_wiring_test.moc"

// HistoryView, offscreen: shows the pages it is given, sends search and sort
// to the query (never sorting or filtering itself), enables overlay for 2+
// selected runs (refusing remote ones), opens a run on Enter / double click
// (a remote one through its host), lists remote runs as host:path, and shows the config
// diff of the selection — first fed by hand, then wired to a real
// HistoryWorker on its thread over a real database of real run directories;
// an import shows a bar with Cancel, and a cancelled import stores nothing.
#include "ui/history/history_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "app/common/worker_thread.h"
#include "app/history/history_worker.h"
#include "tests/app/history/run_dir_fixture.h"
#include "tests/app/history/worker_signals.h"
#include "ui/history/config_diff_table.h"
#include "ui/history/history_table_model.h"

namespace fs::ui {
namespace {

using app::HistoryPage;
using app::HistoryQuery;
using app::RunRecord;

RunRecord run(const QString& id, const QString& name, qint64 started) {
  RunRecord r;
  r.runId = id;
  r.name = name;
  r.runDir = QStringLiteral("/runs/") + name;
  r.status = QStringLiteral("finished");
  r.startedMs = started;
  r.endedMs = started + 3'723'000;  // 1:02:03
  r.lastStep = 40;
  r.totalSteps = 50;
  r.finalLosses = {{QStringLiteral("laion"), 2.5}, {QStringLiteral("mmc4"), 1.25}};
  return r;
}

QString cell(const HistoryView& view, int row, int column) {
  return view.model()->index(row, column).data().toString();
}

void selectRows(HistoryView& view, const QList<int>& rows) {
  QItemSelection selection;
  for (int row : rows)
    selection.select(view.model()->index(row, 0),
                     view.model()->index(row, HistoryTableModel::kColumnCount - 1));
  view.table()->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
}

// Answers the view's last query with `runs`.
HistoryPage answer(const QSignalSpy& queries, const QList<RunRecord>& runs) {
  HistoryPage page;
  page.query = queries.last().at(0).value<HistoryQuery>();
  page.runs = runs;
  page.total = static_cast<int>(runs.size());
  return page;
}

}  // namespace

class HistoryViewTest : public QObject {
  Q_OBJECT

 private slots:
  void showsThePageItIsGiven() {
    HistoryView view;
    QSignalSpy queries(&view, &HistoryView::queryRequested);
    view.refresh();
    QCOMPARE(queries.size(), 1);
    view.setPage(
        answer(queries, {run("a", "alpha", 1'700'000'000'000), run("b", "beta", 1'700'000'100'000)}));
    QCOMPARE(view.model()->rowCount(), 2);
    QCOMPARE(cell(view, 0, HistoryTableModel::kName), QStringLiteral("alpha"));
    QCOMPARE(cell(view, 0, HistoryTableModel::kStatus), QStringLiteral("finished"));
    QCOMPARE(cell(view, 0, HistoryTableModel::kDuration), QStringLiteral("1:02:03"));
    QCOMPARE(cell(view, 0, HistoryTableModel::kSteps), QStringLiteral("40 / 50"));
    QCOMPARE(cell(view, 0, HistoryTableModel::kLosses), QStringLiteral("laion 2.5, mmc4 1.25"));
    QCOMPARE(cell(view, 1, HistoryTableModel::kRunDir), QStringLiteral("/runs/beta"));
    QVERIFY(!cell(view, 0, HistoryTableModel::kStarted).isEmpty());
    QCOMPARE(view.statusLabel()->text(), QStringLiteral("2 run(s)"));

    // An answer to an older request is dropped.
    view.refresh();
    HistoryPage stale = answer(queries, {run("c", "gamma", 1)});
    stale.query.requestId -= 1;
    view.setPage(stale);
    QCOMPARE(view.model()->rowCount(), 2);
  }

  void searchTextReachesTheQueryOnceItSettles() {
    HistoryView view;
    view.setSearchDelayMs(20);
    QSignalSpy queries(&view, &HistoryView::queryRequested);
    QTest::keyClicks(view.searchBox(), QStringLiteral("laion big"));
    QCOMPARE(queries.size(), 0);  // nothing per key
    QVERIFY(queries.wait(5000));
    QCOMPARE(queries.size(), 1);  // one query for the whole text
    QCOMPARE(queries[0].at(0).value<HistoryQuery>().search, QStringLiteral("laion big"));
    // Return sends at once.
    view.searchBox()->setText(QStringLiteral("mmc4"));
    QTest::keyClick(view.searchBox(), Qt::Key_Return);
    QCOMPARE(queries.size(), 2);
    QCOMPARE(queries[1].at(0).value<HistoryQuery>().search, QStringLiteral("mmc4"));
  }

  void headerClicksSortInTheQuery() {
    HistoryView view;
    view.resize(900, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy queries(&view, &HistoryView::queryRequested);
    QHeaderView* header = view.table()->horizontalHeader();
    const auto click = [&](int column) {
      QTest::mouseClick(header->viewport(), Qt::LeftButton, {},
                        QPoint(header->sectionViewportPosition(column) + header->sectionSize(column) / 2,
                               header->height() / 2));
    };
    click(HistoryTableModel::kName);
    QCOMPARE(queries.size(), 1);
    const auto q = queries.last().at(0).value<HistoryQuery>();
    QCOMPARE(q.sort, app::HistorySort::kName);
    click(HistoryTableModel::kName);  // again: the other order
    QCOMPARE(queries.size(), 2);
    QVERIFY(queries.last().at(0).value<HistoryQuery>().order != q.order);
    // The view itself never reorders rows.
    view.setPage(answer(queries, {run("z", "zulu", 2), run("a", "alpha", 1)}));
    QCOMPARE(cell(view, 0, HistoryTableModel::kName), QStringLiteral("zulu"));
    // Final losses cannot be sorted by the database: no query, indicator stays.
    click(HistoryTableModel::kLosses);
    QCOMPARE(queries.size(), 2);
    QCOMPARE(header->sortIndicatorSection(), int(HistoryTableModel::kName));
  }

  void selectionDrivesOverlayOpenAndDiff() {
    HistoryView view;
    QSignalSpy queries(&view, &HistoryView::queryRequested);
    QSignalSpy diffs(&view, &HistoryView::configDiffRequested);
    QSignalSpy overlay(&view, &HistoryView::overlayRuns);
    QSignalSpy open(&view, &HistoryView::openRun);
    view.refresh();
    view.setPage(answer(queries, {run("a", "alpha", 3), run("b", "beta", 2), run("c", "gamma", 1)}));
    QVERIFY(!view.overlayButton()->isEnabled());

    selectRows(view, {0});
    QVERIFY(!view.overlayButton()->isEnabled());
    QCOMPARE(diffs.size(), 0);
    selectRows(view, {2, 0});
    QVERIFY(view.overlayButton()->isEnabled());
    QCOMPARE(diffs.size(), 1);
    QCOMPARE(diffs[0].at(0).toStringList(), (QStringList{"a", "c"}));

    QTest::mouseClick(view.overlayButton(), Qt::LeftButton);
    QCOMPARE(overlay.size(), 1);
    QCOMPARE(overlay[0].at(0).toStringList(), (QStringList{"/runs/alpha", "/runs/gamma"}));

    app::RunConfigDiff diff;
    diff.requestId = diffs[0].at(1).value<quint64>();
    diff.runIds = {QStringLiteral("a"), QStringLiteral("c")};
    diff.labels = {QStringLiteral("alpha"), QStringLiteral("gamma")};
    diff.fields = {{QStringLiteral("optim.lr"), {QStringLiteral("0.0001"), QStringLiteral("0.0002")}},
                   {QStringLiteral("data.datasets[1].name"), {std::nullopt, QStringLiteral("mmc4")}}};
    view.setConfigDiff(diff);
    QTableWidget* table = view.diffTable()->table();
    QCOMPARE(table->rowCount(), 2);
    QCOMPARE(table->columnCount(), 3);
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QStringLiteral("alpha"));
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("optim.lr"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("0.0002"));
    QCOMPARE(table->item(1, 1)->text(), QStringLiteral("\u2014"));
    QVERIFY(view.diffTable()->note().isEmpty());

    // The page refreshes (a live run moved on): the selection and the diff stay.
    view.refresh();
    view.setPage(answer(queries, {run("a", "alpha", 3), run("b", "beta", 2), run("c", "gamma", 1)}));
    QCOMPARE(view.selectedRunIds(), (QStringList{"a", "c"}));
    QCOMPARE(diffs.size(), 1);
    QCOMPARE(table->rowCount(), 2);

    // Enter on the current row opens it.
    view.table()->setCurrentIndex(view.model()->index(1, 0));
    QTest::keyClick(view.table(), Qt::Key_Return);
    QCOMPARE(open.size(), 1);
    QCOMPARE(open[0].at(0).toString(), QStringLiteral("/runs/beta"));
    QVERIFY(!view.overlayButton()->isEnabled());  // setCurrentIndex selected only that row
    QVERIFY(!view.diffTable()->note().isEmpty());
  }

  void aRemoteRowShowsHostPathReattachesAndIsRefusedByTheOverlay() {
    HistoryView view;
    QSignalSpy queries(&view, &HistoryView::queryRequested);
    QSignalSpy overlay(&view, &HistoryView::overlayRuns);
    QSignalSpy open(&view, &HistoryView::openRun);
    QSignalSpy openRemote(&view, &HistoryView::openRemoteRun);
    RunRecord remote = run("r", "remote", 3);
    remote.runDir = QStringLiteral("/scratch/runs/remote");
    remote.location = QStringLiteral("alice@login.cluster");
    view.refresh();
    view.setPage(answer(queries, {remote, run("a", "alpha", 2), run("b", "beta", 1)}));
    QCOMPARE(cell(view, 0, HistoryTableModel::kRunDir),
             QStringLiteral("alice@login.cluster:/scratch/runs/remote"));
    QCOMPARE(cell(view, 1, HistoryTableModel::kRunDir), QStringLiteral("/runs/alpha"));
    QVERIFY(view.model()->index(0, 0).data(Qt::ToolTipRole).toString().contains(remote.location));

    // Enter on the remote row asks for a re-attach through its host, not a local follow.
    view.table()->setCurrentIndex(view.model()->index(0, 0));
    QTest::keyClick(view.table(), Qt::Key_Return);
    QCOMPARE(open.size(), 0);
    QCOMPARE(openRemote.size(), 1);
    QCOMPARE(openRemote[0].at(0).toString(), remote.location);
    QCOMPARE(openRemote[0].at(1).toString(), remote.runDir);

    // The overlay reads local files: a selection with a remote row is refused, named.
    selectRows(view, {0, 1});
    QVERIFY(view.overlayButton()->isEnabled());
    QTest::mouseClick(view.overlayButton(), Qt::LeftButton);
    QCOMPARE(overlay.size(), 0);
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("alice@login.cluster:/scratch/runs/remote")),
             qPrintable(view.statusLabel()->text()));
    QVERIFY(!view.statusLabel()->text().contains(QStringLiteral("/runs/alpha")));
    selectRows(view, {1, 2});
    QTest::mouseClick(view.overlayButton(), Qt::LeftButton);
    QCOMPARE(overlay.size(), 1);
    QCOMPARE(overlay[0].at(0).toStringList(), (QStringList{"/runs/alpha", "/runs/beta"}));
  }

  void wiredToARealWorker() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString a = test::writeRunDir(dir.path(), QStringLiteral("laion-small"),
                                        test::finishedRun("id-1", 1'717'200'000'000, 3, 1e-4));
    const QString b = test::writeRunDir(dir.path(), QStringLiteral("laion-big"),
                                        test::finishedRun("id-2", 1'717'300'000'000, 5, 3e-4));
    const QString c = test::writeRunDir(dir.path(), QStringLiteral("mmc4-only"),
                                        test::finishedRun("id-3", 1'717'400'000'000, 4, 1e-4));
    app::WorkerThread<app::HistoryWorker> thread(new app::HistoryWorker, QStringLiteral("history"));
    HistoryView view;
    view.setSearchDelayMs(10);
    connectHistoryView(&view, thread.worker());
    app::HistoryWorker mirror;  // the worker's signals on this thread (worker_signals.h)
    test::mirrorSignals(thread.worker(), &mirror);
    QSignalSpy queried(&mirror, &app::HistoryWorker::queried);
    QSignalSpy opened(&mirror, &app::HistoryWorker::opened);
    QMetaObject::invokeMethod(thread.worker(), "open", Qt::QueuedConnection,
                              Q_ARG(QString, dir.filePath(QStringLiteral("history.sqlite"))));
    QVERIFY(opened.wait(10'000));
    // Importing writes, and every write makes the view query again.
    QMetaObject::invokeMethod(thread.worker(), "importRunDirs", Qt::QueuedConnection,
                              Q_ARG(QStringList, (QStringList{a, b, c})));
    QTRY_COMPARE_WITH_TIMEOUT(view.model()->rowCount(), 3, 10'000);
    QCOMPARE(cell(view, 0, HistoryTableModel::kName), QStringLiteral("mmc4-only"));  // newest first

    QTest::keyClicks(view.searchBox(), QStringLiteral("laion"));
    QTRY_COMPARE_WITH_TIMEOUT(view.model()->rowCount(), 2, 10'000);
    QCOMPARE(queried.last().at(0).value<HistoryPage>().query.search, QStringLiteral("laion"));
    QCOMPARE(cell(view, 0, HistoryTableModel::kName), QStringLiteral("laion-big"));

    selectRows(view, {0, 1});
    QVERIFY(view.overlayButton()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(view.diffTable()->table()->rowCount(), 2, 10'000);  // name and optim.lr
    QTableWidget* table = view.diffTable()->table();
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("optim.lr"));
    QCOMPARE(table->item(1, 1)->text(), QStringLiteral("3e-04"));
    QCOMPARE(table->item(1, 2)->text(), QStringLiteral("1e-04"));
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QStringLiteral("laion-big"));

    // A picture for people to look at: <build>/tests/screenshots/history_view.png.
    view.resize(1100, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCoreApplication::sendPostedEvents();  // pending layout requests, as before a paint
    const QString shots = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
    QVERIFY(QDir().mkpath(shots));
    QVERIFY(view.grab().save(shots + QStringLiteral("/history_view.png")));

    // A folder that is not a run: the reason shows in the status line.
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("stray")));
    QMetaObject::invokeMethod(thread.worker(), "importRunDir", Qt::QueuedConnection,
                              Q_ARG(QString, dir.filePath(QStringLiteral("stray"))));
    QTRY_VERIFY_WITH_TIMEOUT(view.statusLabel()->text().contains(QStringLiteral("stray/run.json")), 10'000);
    QVERIFY(view.statusLabel()->text().startsWith(QStringLiteral("History (import): ")));
    thread.finishPending();
  }

  // An import shows its bar and Cancel; Cancel reaches the worker, which stops at
  // its next chunk and stores nothing; the bar goes away and the status says so.
  // A worker on this thread, so the import runs inside importRunDir() and the
  // cancel lands between its first and second chunk (events.jsonl > 1 MiB).
  void importShowsProgressAndCancelStoresNothing() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    test::FixtureRun big = test::finishedRun("id-big", 1'717'200'000'000, 3);
    for (int i = 0; i < 40'000; ++i)
      big.extraEventText += "{\"padding\": \"0123456789012345678901234567890123\"}\n";
    const QString runDir = test::writeRunDir(dir.path(), QStringLiteral("big"), big);
    app::HistoryWorker worker;
    HistoryView view;
    connectHistoryView(&view, &worker);
    QSignalSpy opened(&worker, &app::HistoryWorker::opened);
    worker.open(dir.filePath(QStringLiteral("history.sqlite")));
    QCOMPARE(opened.size(), 1);
    QVERIFY(view.importBar()->isHidden());

    QSignalSpy cancelAsked(&view, &HistoryView::importCancelRequested);
    QSignalSpy failed(&worker, &app::HistoryWorker::importFailed);
    QSignalSpy imported(&worker, &app::HistoryWorker::imported);
    int barValueSeen = -1;
    bool cancelShown = false;
    connect(&worker, &app::HistoryWorker::importProgress, this, [&] {
      if (barValueSeen >= 0) return;  // the first chunk only
      barValueSeen = view.importBar()->value();
      cancelShown = !view.importCancelButton()->isHidden() && view.importCancelButton()->isEnabled();
      view.importCancelButton()->click();
    });
    worker.importRunDir(runDir);
    QVERIFY2(barValueSeen > 0 && barValueSeen < 1000, qPrintable(QString::number(barValueSeen)));
    QVERIFY(cancelShown);
    QCOMPARE(cancelAsked.size(), 1);
    QCOMPARE(imported.size(), 0);
    QCOMPARE(failed.size(), 1);
    QVERIFY(failed[0].at(2).toBool());  // cancelled
    QVERIFY(view.importBar()->isHidden());
    QVERIFY(view.importCancelButton()->isHidden());
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("cancelled")),
             qPrintable(view.statusLabel()->text()));

    // Nothing stored: the same run imports afterwards, and the bar ends hidden.
    disconnect(&worker, &app::HistoryWorker::importProgress, this, nullptr);
    worker.importRunDir(runDir);
    QCOMPARE(imported.size(), 1);
    QVERIFY(view.importBar()->isHidden());
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::HistoryViewTest)
#include "history_view_test.moc"

// The History tab's Export, offscreen, through HistoryView::exportSelected (what
// the Export menu's file dialogs call) and a real RunExportWorker thread, on run
// directories holding the golden 1.4 telemetry sample: a CSV and TensorBoard
// folders are written; Cancel (the progress dialog's, and one that lands in the
// middle of a two-run export) leaves nothing behind; remote runs are refused.
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QProgressDialog>
#include <QPushButton>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "app/history/run_export_worker.h"
#include "ui/history/history_table_model.h"
#include "ui/history/history_view.h"

namespace fs::ui {
namespace {

using app::RunExportFormat;
using app::RunExportResult;

// A run directory: the golden telemetry sample as events.jsonl, and a config.
QString makeRun(const QTemporaryDir& root, const QString& name) {
  const QString dir = root.filePath(name);
  QDir().mkpath(dir);
  QFile::copy(QStringLiteral(FS_SOURCE_DIR "/tests/assets/telemetry/events-1.4.jsonl"),
              dir + "/events.jsonl");
  QFile config(dir + "/config.yaml");
  config.open(QIODevice::WriteOnly);
  config.write("name: " + name.toUtf8() + "\n");
  return dir;
}

app::RunRecord record(const QString& runDir, const QString& location = {}) {
  app::RunRecord r;
  r.runId = QFileInfo(runDir).fileName() + location;
  r.name = QFileInfo(runDir).fileName();
  r.runDir = runDir;
  r.location = location;
  r.status = QStringLiteral("finished");
  return r;
}

// Shows `runs` in `view` and selects them all.
void showAndSelect(HistoryView& view, const QList<app::RunRecord>& runs) {
  QSignalSpy queries(&view, &HistoryView::queryRequested);
  view.refresh();
  app::HistoryPage page;
  page.query = queries.last().at(0).value<app::HistoryQuery>();
  page.runs = runs;
  page.total = static_cast<int>(runs.size());
  view.setPage(page);
  view.table()->selectAll();
}

RunExportResult waitForResult(QSignalSpy& finished) {
  if (finished.isEmpty() && !finished.wait(60000)) return {};
  return finished.takeFirst().at(0).value<RunExportResult>();
}

QStringList filesUnder(const QString& dir) {
  QStringList files;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) files << QDir(dir).relativeFilePath(it.next());
  return files;
}

}  // namespace

class HistoryExportTest : public QObject {
  Q_OBJECT

 private slots:
  void exportsCsvAndTensorBoard() {
    QTemporaryDir root;
    const QString run = makeRun(root, QStringLiteral("run-a"));
    HistoryView view;
    QVERIFY(!view.exportButton()->isEnabled());
    showAndSelect(view, {record(run)});
    QVERIFY(view.exportButton()->isEnabled());
    QSignalSpy finished(&view, &HistoryView::exportFinished);

    const QString csv = root.filePath(QStringLiteral("out/all.csv"));
    QDir().mkpath(root.filePath(QStringLiteral("out")));
    QVERIFY(view.exportSelected(RunExportFormat::kCsv, csv, false) != 0);
    QVERIFY(view.exportProgress() != nullptr);
    RunExportResult result = waitForResult(finished);
    QVERIFY2(result.ok, qPrintable(result.message));
    QCOMPARE(result.outputs, QStringList{csv});
    QVERIFY(view.exportProgress() == nullptr);
    QFile file(csv);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readLine(), QByteArray("run,series,step,samples,tokens,wall_time,value\n"));
    QVERIFY(file.readAll().contains("run-a,loss/laion,1250,2560000,81920000,1717000000.123,2.8125\n"));
    QVERIFY(view.statusLabel()->text().contains(QStringLiteral("Exported 1 run(s) to ") + csv));

    // A corrupt line: the rest is exported, the status line names the line.
    QFile events(run + "/events.jsonl");
    QVERIFY(events.open(QIODevice::Append));
    events.write("{broken\n");
    events.close();
    QVERIFY(view.exportSelected(RunExportFormat::kCsv, csv, true) != 0);
    result = waitForResult(finished);
    QVERIFY2(result.ok, qPrintable(result.message));
    QCOMPARE(result.warnings.size(), 1);
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("1 warning(s), the first: ") + run +
                                                 QStringLiteral("/events.jsonl line 27")),
             qPrintable(view.statusLabel()->text()));

    const QString tb = root.filePath(QStringLiteral("tb"));
    QDir().mkpath(tb);
    QVERIFY(view.exportSelected(RunExportFormat::kTensorBoard, tb, false) != 0);
    result = waitForResult(finished);
    QVERIFY2(result.ok, qPrintable(result.message));
    const QStringList files = filesUnder(tb);
    QCOMPARE(files.size(), 1);
    QVERIFY2(files[0].startsWith(QStringLiteral("run-a/events.out.tfevents.")), qPrintable(files[0]));

    // Again, without replacing: refused, naming the folder; the old file stays.
    QVERIFY(view.exportSelected(RunExportFormat::kTensorBoard, tb, false) != 0);
    result = waitForResult(finished);
    QVERIFY(!result.ok && !result.cancelled);
    QVERIFY2(result.message.contains(tb + QStringLiteral("/run-a already holds TensorBoard event files")),
             qPrintable(result.message));
    QCOMPARE(filesUnder(tb), files);
  }

  void cancelInTheMiddleRemovesEverything() {
    QTemporaryDir root;
    const QString a = makeRun(root, QStringLiteral("run-a"));
    const QString b = makeRun(root, QStringLiteral("run-b"));
    const qint64 firstSize = QFileInfo(a + "/events.jsonl").size();
    HistoryView view;
    showAndSelect(view, {record(a), record(b)});
    QSignalSpy finished(&view, &HistoryView::exportFinished);
    // Cancelled on the worker's thread as soon as the second run is being read: the
    // first run's event file is written by then, and must go too.
    app::RunExportWorker* worker = view.exportWorker();
    connect(
        worker, &app::RunExportWorker::progress, worker,
        [worker, firstSize](quint64 id, qint64 done, qint64) {
          if (done > firstSize) worker->cancel(id);
        },
        Qt::DirectConnection);
    const QString tb = root.filePath(QStringLiteral("tb"));
    QDir().mkpath(tb);
    QVERIFY(view.exportSelected(RunExportFormat::kTensorBoard, tb, false) != 0);
    const RunExportResult result = waitForResult(finished);
    QVERIFY(result.cancelled);
    QVERIFY(!result.ok);
    QCOMPARE(filesUnder(tb), QStringList{});
    QCOMPARE(QDir(tb).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{});
    QVERIFY(view.statusLabel()->text().contains(QStringLiteral("cancelled")));
  }

  void progressDialogCancelStopsTheExport() {
    QTemporaryDir root;
    const QString a = makeRun(root, QStringLiteral("run-a"));
    HistoryView view;
    showAndSelect(view, {record(a)});
    QSignalSpy finished(&view, &HistoryView::exportFinished);
    // Hold the worker's thread so the export cannot start before Cancel is pressed.
    QSemaphore hold;
    app::RunExportWorker* worker = view.exportWorker();
    QMetaObject::invokeMethod(
        worker, [&hold] { hold.acquire(); }, Qt::QueuedConnection);
    const QString csv = root.filePath(QStringLiteral("out.csv"));
    QVERIFY(view.exportSelected(RunExportFormat::kCsv, csv, false) != 0);
    QVERIFY(view.exportSelected(RunExportFormat::kCsv, csv, false) == 0);  // one at a time
    QVERIFY(view.statusLabel()->text().contains(QStringLiteral("still running")));
    QProgressDialog* dialog = view.exportProgress();
    QVERIFY(dialog != nullptr);
    auto* cancel = dialog->findChild<QPushButton*>();
    QVERIFY(cancel != nullptr);
    QCOMPARE(cancel->text(), QStringLiteral("Cancel"));
    cancel->click();
    hold.release();
    const RunExportResult result = waitForResult(finished);
    QVERIFY(result.cancelled);
    QVERIFY(!QFile::exists(csv));
    QCOMPARE(QDir(root.path()).entryList(QDir::Files | QDir::Hidden), QStringList{});
  }

  void remoteRunsAreRefused() {
    QTemporaryDir root;
    const QString a = makeRun(root, QStringLiteral("run-a"));
    HistoryView view;
    showAndSelect(view, {record(a), record(QStringLiteral("/srv/runs/x"), QStringLiteral("user@gpu1"))});
    QCOMPARE(view.exportSelected(RunExportFormat::kCsv, root.filePath(QStringLiteral("x.csv")), false), 0u);
    QVERIFY2(view.statusLabel()->text().contains(QStringLiteral("Cannot export remote runs")),
             qPrintable(view.statusLabel()->text()));
    QVERIFY(view.statusLabel()->text().contains(QStringLiteral("user@gpu1:/srv/runs/x")));
    QVERIFY(view.exportProgress() == nullptr);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::HistoryExportTest)
#include "history_export_test.moc"

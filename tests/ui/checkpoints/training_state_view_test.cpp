// The inspector's Training state tab driven as a user would, offscreen, on
// checkpoints Python's torch.save wrote (make_checkpoints.py):
//  - opening a checkpoint reads nothing until the tab is shown; then the
//    groups table, the per-parameter rows and the scheduler line show the
//    worker's figures (readTrainingState's) and torch's;
//  - the per-parameter table filters by name and sorts norms as numbers;
//  - OpenFlamingo's checkpoint says which parts are "not in this checkpoint";
//  - ours.pt's malformed data position shows the error naming the file.
#include "ui/checkpoints/training_state_view.h"

#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <cmath>
#include <limits>

#include "app/checkpoints/inspector_worker.h"
#include "tests/app/checkpoints/checkpoint_fixtures.h"
#include "ui/checkpoints/checkpoint_inspector.h"

namespace fs::ui {

class TrainingStateViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    fixtures_ = std::make_unique<test::CheckpointFixtures>();
    QVERIFY2(fixtures_->ok(), qPrintable(fixtures_->error()));
  }

  void theTabShowsTheWorkersFigures() {
    CheckpointInspector inspector;
    inspector.resize(1200, 750);
    inspector.show();
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("openflamingo_train.pt"))));
    TrainingStateView* view = inspector.trainingStateView();
    QVERIFY(!view->hasResult());
    QVERIFY(!view->readButton()->isHidden());
    QVERIFY(view->progressBar()->isHidden());  // no read asked for before the tab is shown
    inspector.tabs()->setCurrentWidget(view);
    QVERIFY(!view->progressBar()->isHidden());  // asked for now
    QTRY_VERIFY(view->hasResult());

    const QJsonObject torch = fixtures_->expected()[QStringLiteral("state")].toObject();
    const QJsonArray groups = torch[QStringLiteral("groups")].toArray();
    QTableWidget* table = view->groupsTable();
    QCOMPARE(table->rowCount(), groups.size());
    for (int g = 0; g < table->rowCount(); ++g) {
      const QJsonObject want = groups[g].toObject();
      QCOMPARE(table->item(g, 1)->text(), QString::number(want[QStringLiteral("params")].toInt()));
      QCOMPARE(table->item(g, 2)->text(), TrainingStateView::number(want[QStringLiteral("lr")].toDouble()));
      QCOMPARE(table->item(g, 3)->text(),
               TrainingStateView::number(want[QStringLiteral("weight_decay")].toDouble()));
      QCOMPARE(table->item(g, 4)->text(), QStringLiteral("0.9"));
      QCOMPARE(table->item(g, 5)->text(), QStringLiteral("0.95"));
      QCOMPARE(table->item(g, 6)->text(), QStringLiteral("1e-07"));
    }

    const QJsonArray params = torch[QStringLiteral("params")].toArray();
    QSortFilterProxyModel* rows = view->paramsProxy();
    QCOMPARE(rows->rowCount(), params.size());
    for (int r = 0; r < rows->rowCount(); ++r) {  // ascending id
      const QJsonObject want = params[r].toObject();
      QCOMPARE(text(rows, r, TrainingStateView::kName), want[QStringLiteral("name")].toString());
      QCOMPARE(text(rows, r, TrainingStateView::kGroup),
               QString::number(want[QStringLiteral("group")].toInt()));
      QCOMPARE(text(rows, r, TrainingStateView::kStep),
               TrainingStateView::number(want[QStringLiteral("step")].toDouble()));
      const double norm = text(rows, r, TrainingStateView::kExpAvg).toDouble();
      const double want_norm = want[QStringLiteral("exp_avg_norm")].toDouble();
      QVERIFY2(std::abs(norm - want_norm) <= 1e-5 * std::max(1.0, want_norm),
               qPrintable(QStringLiteral("%1 vs %2").arg(norm).arg(want_norm)));
    }

    // Sorted by |exp_avg_sq|, largest first: by value.
    view->paramsView()->sortByColumn(TrainingStateView::kExpAvgSq, Qt::DescendingOrder);
    double previous = std::numeric_limits<double>::infinity();
    for (int r = 0; r < rows->rowCount(); ++r) {
      const double v = text(rows, r, TrainingStateView::kExpAvgSq).toDouble();
      QVERIFY(v <= previous);
      previous = v;
    }
    // Filtered by name.
    QTest::keyClicks(view->filterEdit(), QStringLiteral("gated_cross"));
    QCOMPARE(rows->rowCount(), 2);
    for (int r = 0; r < rows->rowCount(); ++r)
      QVERIFY(text(rows, r, TrainingStateView::kName).contains(QStringLiteral("gated_cross_attn")));

    const QJsonObject sched = torch[QStringLiteral("scheduler")].toObject();
    QVERIFY2(view->schedulerLabel()->text().contains(
                 QStringLiteral("last_epoch %1").arg(sched[QStringLiteral("last_epoch")].toInteger())),
             qPrintable(view->schedulerLabel()->text()));
    // OpenFlamingo's carries its epoch but no step, RNG or data position.
    const QString summary = view->summaryLabel()->text();
    QVERIFY2(summary.contains(QStringLiteral("Epoch 4")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("not in this checkpoint")), qPrintable(summary));
  }

  void aMalformedPartShowsTheErrorNamingTheFile() {
    CheckpointInspector inspector;
    inspector.show();
    inspector.tabs()->setCurrentWidget(inspector.trainingStateView());
    QSignalSpy failed(&inspector, &CheckpointInspector::failed);
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("ours.pt"))));  // read at once: the tab is shown
    QTRY_VERIFY(!failed.isEmpty());
    const QString message = inspector.trainingStateView()->messageLabel()->text();
    QVERIFY2(message.contains(fixtures_->path(QStringLiteral("ours.pt"))) &&
                 message.contains(QStringLiteral("flamingo_studio.data_position")),
             qPrintable(message));
    QVERIFY(!inspector.trainingStateView()->hasResult());
    QVERIFY(!inspector.trainingStateView()->readButton()->isHidden());  // may be tried again
  }

 private:
  static QString text(QSortFilterProxyModel* rows, int row, int column) {
    return rows->index(row, column).data().toString();
  }

  static bool open(CheckpointInspector& inspector, const QString& path) {
    QSignalSpy opened(&inspector, &CheckpointInspector::opened);
    QSignalSpy failed(&inspector, &CheckpointInspector::failed);
    inspector.openPath(path);
    for (int i = 0; i < 6000 && opened.isEmpty() && failed.isEmpty(); ++i) opened.wait(10);
    if (!failed.isEmpty()) qWarning() << failed.at(0).at(0).toString();
    return !opened.isEmpty();
  }

  std::unique_ptr<test::CheckpointFixtures> fixtures_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::TrainingStateViewTest)
#include "training_state_view_test.moc"

// CheckpointInspector driven as a user would, on checkpoints Python's
// torch.save wrote (tests/backend/inspect/make_checkpoints.py), offscreen:
//  - open a file, expand the tree, select a tensor: its statistics are
//    computed and the figures shown are the worker's (and the backend's on
//    the same bytes); the log-count toggle switches the histogram's axis;
//  - a subtree's statistics cancelled mid-run show "Cancelled.";
//  - a diff's first row is the tensor torch says changed most;
//  - hash verification marks the tensor whose bytes differ;
//  - a synthesized drop of a file opens it (on the inspector and on a window
//    given acceptCheckpointDrops); a run directory opens its newest checkpoint
//    and offers the others;
//  - a damaged file's error names it.
// QAbstractItemModelTester checks the tree model's contract throughout.
#include "ui/checkpoints/checkpoint_inspector.h"

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QMimeData>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTreeView>
#include <QUrl>
#include <QtTest>

#include "app/checkpoints/inspector_worker.h"
#include "tests/app/checkpoints/checkpoint_fixtures.h"
#include "ui/checkpoints/diff_view.h"
#include "ui/checkpoints/module_tree_model.h"
#include "ui/checkpoints/stats_panel.h"

namespace fs::ui {

class CheckpointInspectorTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    fixtures_ = std::make_unique<test::CheckpointFixtures>();
    QVERIFY2(fixtures_->ok(), qPrintable(fixtures_->error()));
  }

  void selectingATensorShowsItsStatistics() {
    CheckpointInspector inspector;
    QAbstractItemModelTester tester(inspector.treeModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    inspector.resize(1200, 750);
    inspector.show();
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("openflamingo.pt"))));
    ModuleTreeModel* model = inspector.treeModel();
    QCOMPARE(model->rowCount(), 2);  // model, optimizer
    const QModelIndex lang = model->indexOf(inspect::Section::kModel, QStringLiteral("lang_encoder"));
    QVERIFY(lang.isValid());
    inspector.tree()->expand(lang);
    QVERIFY(inspector.tree()->isExpanded(lang));
    const QModelIndex head =
        model->indexOf(inspect::Section::kModel, QStringLiteral("lang_encoder.lm_head.weight"));
    QCOMPARE(model->index(head.row(), ModuleTreeModel::kTied, head.parent()).data().toString(),
             QStringLiteral("same as lang_encoder.embed_tokens.weight"));

    const QString name = QStringLiteral("lang_encoder.embed_tokens.weight");
    const QModelIndex emb = model->indexOf(inspect::Section::kModel, name);
    QCOMPARE(model->index(emb.row(), ModuleTreeModel::kShape, emb.parent()).data().toString(),
             QStringLiteral("[6, 4]"));
    inspector.tree()->setCurrentIndex(emb);
    QTRY_VERIFY(inspector.lastStats().has_value());
    const app::StatsResult& shown = *inspector.lastStats();
    QCOMPARE(shown.label, name);

    // The worker's own answer for the same target, on a second worker.
    app::InspectorWorker direct;
    QSignalSpy ready(&direct, &app::InspectorWorker::statsReady);
    direct.open(1, fixtures_->path(QStringLiteral("openflamingo.pt")));
    direct.stats(2, model->targetAt(emb));
    QCOMPARE(ready.count(), 1);
    const auto want = ready.at(0).at(1).value<app::StatsResult>().stats.moments;
    const QMap<QString, QString> figures = inspector.statsPanel()->figures();
    QCOMPARE(figures[QStringLiteral("elements")], QStringLiteral("24"));
    QCOMPARE(figures[QStringLiteral("min")], QString::fromStdString(want.min->toString()));
    QCOMPARE(figures[QStringLiteral("max")], QString::fromStdString(want.max->toString()));
    QCOMPARE(figures[QStringLiteral("mean")], StatsPanel::formatFigure(want.meanOrNaN()));
    QCOMPARE(figures[QStringLiteral("std")], StatsPanel::formatFigure(want.stddev()));
    QCOMPARE(figures[QStringLiteral("l2")], StatsPanel::formatFigure(want.l2Norm()));
    QCOMPARE(figures[QStringLiteral("zeros")], QStringLiteral("0"));

    QCustomPlot* plot = inspector.statsPanel()->plot();
    QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLinear);
    inspector.statsPanel()->logCountsBox()->click();
    QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLogarithmic);
  }

  void cancellingASubtreeRunShowsCancelled() {
    CheckpointInspector inspector;
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("openflamingo.pt"))));
    app::InspectorWorker* worker = inspector.worker();
    worker->setChunkBytes(8);
    // The user's Cancel, at the run's first progress (on the worker's thread: mid-run for certain).
    connect(
        worker, &app::InspectorWorker::progress, worker, [worker] { worker->cancel(); },
        Qt::DirectConnection);
    inspector.tree()->setCurrentIndex(
        inspector.treeModel()->indexOf(inspect::Section::kModel, QStringLiteral("lang_encoder")));
    QVERIFY(!inspector.lastStats());  // a module waits for the button
    inspector.statsPanel()->computeButton()->click();
    QVERIFY(inspector.statsPanel()->cancelButton()->isVisibleTo(&inspector));
    QTRY_COMPARE(inspector.statsPanel()->messageLabel()->text(), QStringLiteral("Cancelled."));
    QVERIFY(!inspector.lastStats());
    QVERIFY(!inspector.statsPanel()->cancelButton()->isVisibleTo(&inspector));
  }

  void diffListsTheLargestChangeFirst() {
    CheckpointInspector inspector;
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("diff_a.pt"))));
    inspector.compareWith(fixtures_->path(QStringLiteral("diff_b.pt")));
    QCOMPARE(inspector.tabs()->currentWidget(), inspector.diffView());
    QTableView* table = inspector.diffView()->table();
    QTRY_VERIFY(table->model()->rowCount() > 0);
    const QJsonObject want = fixtures_->expected()[QStringLiteral("diff")].toObject();
    QString top;
    double topRel = -1;
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (it.value()[QStringLiteral("relative")].toDouble() > topRel) {
        topRel = it.value()[QStringLiteral("relative")].toDouble();
        top = it.key();
      }
    }
    QCOMPARE(table->model()->index(0, DiffTableModel::kTensor).data().toString(), top);
    QCOMPARE(table->model()->index(0, DiffTableModel::kKind).data().toString(), QStringLiteral("changed"));
    QCOMPARE(table->model()->index(0, DiffTableModel::kRelative).data().toString(),
             QString::number(topRel, 'g', 4));
    // The embedding moved in rows 3 and 7 only.
    for (int r = 0; r < table->model()->rowCount(); ++r) {
      if (table->model()->index(r, DiffTableModel::kTensor).data().toString() == QLatin1String("emb")) {
        QCOMPARE(table->model()->index(r, DiffTableModel::kRows).data().toString(),
                 QStringLiteral("2 of 10: 3, 7"));
      }
    }
  }

  void hashVerificationMarksTheDifferingTensor() {
    CheckpointInspector inspector;
    QAbstractItemModelTester tester(inspector.treeModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(open(inspector, fixtures_->path(QStringLiteral("ours.pt"))));
    QVERIFY(inspector.hashButton()->isEnabled());
    inspector.hashButton()->click();
    QTRY_COMPARE(inspector.hashButton()->text(), QStringLiteral("Hashes: 0 match, 1 differ"));
    ModuleTreeModel* model = inspector.treeModel();
    const QModelIndex bias =
        model->indexOf(inspect::Section::kModel, QStringLiteral("lang_encoder.layers.0.mlp.fc1.bias"));
    QCOMPARE(model->index(bias.row(), ModuleTreeModel::kHash, bias.parent()).data().toString(),
             QStringLiteral("differs"));
    QCOMPARE(model->index(0, ModuleTreeModel::kHash).data().toString(), QStringLiteral("1 differ"));
    QVERIFY(inspector.statusLabel()->text().contains(QStringLiteral("lang_encoder.layers.0.mlp.fc1.bias")));
  }

  void droppingAFileOpensIt() {
    CheckpointInspector inspector;
    QSignalSpy opened(&inspector, &CheckpointInspector::opened);
    const QString path = fixtures_->path(QStringLiteral("state_dict.bin"));
    drop(&inspector, path);
    QVERIFY(test::waitForSignal(opened));
    QCOMPARE(opened.at(0).at(0).toString(), path);

    // A window that forwards drops (the main window does).
    QWidget window;
    QString forwarded;
    acceptCheckpointDrops(&window, [&](const QString& p) { forwarded = p; });
    QVERIFY(window.acceptDrops());
    drop(&window, path);
    QCOMPARE(forwarded, path);
  }

  void aRunDirectoryOpensItsNewestCheckpoint() {
    QTemporaryDir run;
    QVERIFY(QFile::copy(fixtures_->path(QStringLiteral("diff_a.pt")),
                        run.filePath(QStringLiteral("checkpoint_0.pt"))));
    QVERIFY(QFile::copy(fixtures_->path(QStringLiteral("diff_b.pt")),
                        run.filePath(QStringLiteral("checkpoint_1.pt"))));
    QFile newer(run.filePath(QStringLiteral("checkpoint_1.pt")));
    QVERIFY(newer.open(QIODevice::ReadWrite));
    QVERIFY(newer.setFileTime(QDateTime::currentDateTime().addSecs(60), QFileDevice::FileModificationTime));
    newer.close();
    CheckpointInspector inspector;
    QVERIFY(open(inspector, run.path()));
    QCOMPARE(inspector.checkpoint()->path, run.filePath(QStringLiteral("checkpoint_1.pt")));
    QCOMPARE(inspector.runPicker()->count(), 2);
    QCOMPARE(inspector.runPicker()->currentIndex(), 0);
    QSignalSpy opened(&inspector, &CheckpointInspector::opened);
    inspector.runPicker()->setCurrentIndex(1);  // the user picks the older one
    QVERIFY(test::waitForSignal(opened));
    QCOMPARE(inspector.checkpoint()->path, run.filePath(QStringLiteral("checkpoint_0.pt")));
  }

  void aDamagedFileIsNamedInTheError() {
    QTemporaryDir dir;
    const QString damaged = dir.filePath(QStringLiteral("damaged.pt"));
    QFile out(damaged);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write("PK\x03\x04 not really a zip archive");
    out.close();
    CheckpointInspector inspector;
    QSignalSpy failed(&inspector, &CheckpointInspector::failed);
    inspector.openPath(damaged);
    QVERIFY(test::waitForSignal(failed));
    QVERIFY2(failed.at(0).at(0).toString().contains(damaged), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(inspector.statusLabel()->text().contains(damaged));
  }

 private:
  static bool open(CheckpointInspector& inspector, const QString& path) {
    QSignalSpy opened(&inspector, &CheckpointInspector::opened);
    QSignalSpy failed(&inspector, &CheckpointInspector::failed);
    inspector.openPath(path);
    for (int i = 0; i < 6000 && opened.isEmpty() && failed.isEmpty(); ++i) opened.wait(10);
    if (!failed.isEmpty()) qWarning() << failed.at(0).at(0).toString();
    return !opened.isEmpty();
  }

  static void drop(QWidget* target, const QString& path) {
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path)});
    const QPointF at(10, 10);
    QDragEnterEvent enter(at.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(target, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent event(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(target, &event);
    QVERIFY(event.isAccepted());
  }

  std::unique_ptr<test::CheckpointFixtures> fixtures_;
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::CheckpointInspectorTest)
#include "checkpoint_inspector_test.moc"

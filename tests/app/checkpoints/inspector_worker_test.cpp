// InspectorWorker on its WorkerThread, on checkpoints Python's torch.save
// wrote (make_checkpoints.py):
//  - open lists every tensor and builds one module tree per section;
//  - statistics of a tensor equal computeStats on the same bytes; a subtree's
//    merge every untied tensor below it once; asking again is answered from
//    the cache;
//  - a statistics run cancelled mid-way (at its first progress) ends in
//    failed(cancelled); one cancelled while queued never starts; the next
//    request runs;
//  - hashes of our manifest are checked (the fixture's recorded hash differs);
//  - a diff's first row is the tensor torch says changed most;
//  - a damaged or missing file fails naming the file;
//  - the training state of OpenFlamingo's train.py checkpoint equals
//    readTrainingState's and torch's figures; one cancelled at its first
//    progress ends in failed(cancelled); ours.pt's malformed data position
//    fails naming the file and the entry.
#include "app/checkpoints/inspector_worker.h"

#include <QJsonArray>
#include <QSignalSpy>
#include <QtTest>
#include <cmath>

#include "app/common/worker_thread.h"
#include "backend/inspect/training_state.h"
#include "tests/app/checkpoints/checkpoint_fixtures.h"

namespace fs::app {

class InspectorWorkerTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    fixtures_ = std::make_unique<test::CheckpointFixtures>();
    QVERIFY2(fixtures_->ok(), qPrintable(fixtures_->error()));
  }
  void init() {
    thread_ =
        std::make_unique<WorkerThread<InspectorWorker>>(new InspectorWorker, QStringLiteral("inspector"));
  }
  void cleanup() {
    worker()->cancel();
    thread_.reset();
  }

  void opensAndBuildsTrees() {
    const CheckpointModelPtr model = open(QStringLiteral("openflamingo.pt"));
    QVERIFY(model);
    QCOMPARE(model->format, QStringLiteral("OpenFlamingo checkpoint"));
    const auto want =
        fixtures_->expected()[QStringLiteral("openflamingo.pt")][QStringLiteral("tensors")].toArray();
    QCOMPARE(model->tensors.size(), static_cast<std::size_t>(want.size()));
    QCOMPARE(model->trees.size(), std::size_t{2});  // model, optimizer
    QCOMPARE(model->trees[0].first, inspect::Section::kModel);
    const inspect::ModuleNode* lang = model->trees[0].second.find("lang_encoder");
    QVERIFY(lang);
    QCOMPARE(lang->tied, std::uint64_t{1});  // the LM head is the embedding
    const auto head = find(*model, "lang_encoder.lm_head.weight");
    QVERIFY(model->tensors[head].sameAs.has_value());
  }

  void tensorStatsEqualTheBackendsAndAreCached() {
    const CheckpointModelPtr model = open(QStringLiteral("openflamingo.pt"));
    QVERIFY(model);
    StatsTarget target;
    target.tensor = find(*model, "lang_encoder.embed_tokens.weight");
    const StatsResult r = stats(target);
    QCOMPARE(r.tensors.size(), std::size_t{1});
    QVERIFY(!r.fromCache);

    auto index =
        inspect::CheckpointIndex::open(fixtures_->path(QStringLiteral("openflamingo.pt")).toStdString());
    QVERIFY(index.isOk());
    auto data = index->data(*target.tensor);
    QVERIFY(data.isOk());
    tensorfile::StatsOptions options;
    options.bins = target.bins;
    auto want = tensorfile::computeStats(data->view, options);
    QVERIFY(want.isOk());
    QCOMPARE(r.stats.moments.count, std::uint64_t{24});
    QCOMPARE(r.stats.moments.min->toDouble(), want->moments.min->toDouble());
    QCOMPARE(r.stats.moments.max->toDouble(), want->moments.max->toDouble());
    QCOMPARE(r.stats.moments.mean, want->moments.mean);
    QCOMPARE(r.stats.moments.l2Norm(), want->moments.l2Norm());
    QVERIFY(r.stats.histogram.has_value());
    QCOMPARE(r.stats.histogram->counts, want->histogram->counts);
    QCOMPARE(r.stats.histogram->total(), std::uint64_t{24});

    const StatsResult again = stats(target);
    QVERIFY(again.fromCache);
    QCOMPARE(again.stats.moments.mean, r.stats.moments.mean);
  }

  void subtreeStatsCountTiedTensorsOnce() {
    QVERIFY(open(QStringLiteral("openflamingo.pt")));
    StatsTarget target;
    target.nodePath = QStringLiteral("lang_encoder");
    const StatsResult r = stats(target);
    // embedding 6x4, fc1 3x4 + 3, layer 1's 3x4; the tied LM head is left out.
    QCOMPARE(r.tensors.size(), std::size_t{4});
    QCOMPARE(r.stats.moments.count, std::uint64_t{24 + 12 + 3 + 12});
    QCOMPARE(r.stats.moments.zeros, std::uint64_t{0});  // fc1.bias was 0, one AdamW step moved it
    QCOMPARE(r.stats.histogram->total(), r.stats.moments.finite);

    // The same tensors as a list: the same figures.
    StatsTarget list;
    list.tensors = r.tensors;
    const StatsResult l = stats(list);
    QCOMPARE(l.stats.moments.count, r.stats.moments.count);
    QCOMPARE(l.stats.moments.mean, r.stats.moments.mean);
    QCOMPARE(l.stats.histogram->counts, r.stats.histogram->counts);
  }

  void cancelStopsARunningStatsRunAndAQueuedOne() {
    QVERIFY(open(QStringLiteral("openflamingo.pt")));
    worker()->setChunkBytes(8);  // progress (and cancel checks) every two floats
    // Cancel from the worker's own thread on the first progress: mid-run, deterministically.
    connect(
        worker(), &InspectorWorker::progress, worker(), [this] { worker()->cancel(); }, Qt::DirectConnection);
    StatsTarget target;
    target.nodePath = QStringLiteral("lang_encoder");
    QSignalSpy failed(worker(), &InspectorWorker::failed);
    QSignalSpy ready(worker(), &InspectorWorker::statsReady);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t, target] { w->stats(t, target); });
    QVERIFY(test::waitForSignal(failed));
    QCOMPARE(ready.count(), 0);
    QCOMPARE(failed.at(0).at(0).toULongLong(), t);
    QVERIFY(failed.at(0).at(3).toBool());  // cancelled
    QVERIFY2(failed.at(0).at(2).toString().contains(QStringLiteral("cancelled")),
             qPrintable(failed.at(0).at(2).toString()));
    disconnect(worker(), &InspectorWorker::progress, worker(), nullptr);

    // Ticketed, then cancelled before the worker reaches it: never starts.
    const quint64 queued = worker()->newTicket();
    worker()->cancel();
    QMetaObject::invokeMethod(worker(), [w = worker(), queued, target] { w->stats(queued, target); });
    QTRY_COMPARE(failed.count(), 2);
    QCOMPARE(failed.at(1).at(0).toULongLong(), queued);
    QVERIFY(failed.at(1).at(3).toBool());

    // Not cached, and a later request runs to its end.
    const StatsResult r = stats(target);
    QVERIFY(!r.fromCache);
    QCOMPARE(r.stats.moments.count, std::uint64_t{51});
  }

  void hashesOfOurManifestAreChecked() {
    QVERIFY(open(QStringLiteral("ours.pt")));
    QSignalSpy ready(worker(), &InspectorWorker::hashesReady);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t] { w->verifyHashes(t); });
    QVERIFY(test::waitForSignal(ready));
    const auto r = ready.at(0).at(1).value<HashResult>();
    QCOMPARE(r.report.differing, std::uint64_t{1});  // the fixture records a made-up hash
    QCOMPARE(r.report.differ.front(), std::string("lang_encoder.layers.0.mlp.fc1.bias"));
  }

  void diffListsTheLargestRelativeChangeFirst() {
    QVERIFY(open(QStringLiteral("diff_a.pt")));
    QSignalSpy ready(worker(), &InspectorWorker::diffReady);
    const quint64 t = worker()->newTicket();
    const QString b = fixtures_->path(QStringLiteral("diff_b.pt"));
    QMetaObject::invokeMethod(worker(), [w = worker(), t, b] { w->diff(t, b); });
    QVERIFY(test::waitForSignal(ready));
    const auto r = ready.at(0).at(1).value<DiffResult>();
    const QJsonObject want = fixtures_->expected()[QStringLiteral("diff")].toObject();
    QString top;
    double topRel = -1;
    for (auto it = want.begin(); it != want.end(); ++it) {
      const double rel = it.value()[QStringLiteral("relative")].toDouble();
      if (rel > topRel) topRel = rel, top = it.key();
    }
    QCOMPARE(QString::fromStdString(r.report.tensors.front().name), top);
    QVERIFY(std::abs(r.report.tensors.front().relativeChange - topRel) <= 1e-12 * topRel);
    QCOMPARE(r.report.added, std::uint64_t{1});
    QCOMPARE(r.report.removed, std::uint64_t{1});
    QCOMPARE(r.report.misShaped, std::uint64_t{1});
  }

  void damagedAndMissingFilesFailNamingTheFile() {
    QTemporaryDir dir;
    const QString damaged = dir.filePath(QStringLiteral("damaged.pt"));
    QFile in(fixtures_->path(QStringLiteral("openflamingo.pt")));
    QVERIFY(in.open(QIODevice::ReadOnly));
    QFile out(damaged);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(in.read(in.size() / 2));  // the zip directory at the end is gone
    out.close();
    for (const QString& path : {damaged, dir.filePath(QStringLiteral("missing.pt"))}) {
      QSignalSpy failed(worker(), &InspectorWorker::failed);
      QSignalSpy opened(worker(), &InspectorWorker::opened);
      const quint64 t = worker()->newTicket();
      QMetaObject::invokeMethod(worker(), [w = worker(), t, path] { w->open(t, path); });
      QVERIFY2(test::waitForSignal(failed),
               qPrintable(QStringLiteral("%1 opened %2").arg(path).arg(opened.count())));
      const QString message = failed.at(0).at(2).toString();
      QVERIFY2(message.contains(path), qPrintable(message));
      QVERIFY(!failed.at(0).at(3).toBool());
    }
  }

  void listsARunDirectory() {
    QTemporaryDir run;
    QVERIFY(QFile::copy(fixtures_->path(QStringLiteral("openflamingo.pt")),
                        run.filePath(QStringLiteral("checkpoint_2.pt"))));
    QSignalSpy listed(worker(), &InspectorWorker::runListed);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t, p = run.path()] { w->listRun(t, p); });
    QVERIFY(test::waitForSignal(listed));
    const auto listing = listed.at(0).at(1).value<CheckpointListing>();
    QCOMPARE(listing.checkpoints.size(), 1);
    QCOMPARE(listing.checkpoints.front().name, QStringLiteral("checkpoint_2.pt"));
  }

  void trainingStateEqualsTheBackendsAndTorchs() {
    QVERIFY(open(QStringLiteral("openflamingo_train.pt")));
    QSignalSpy progress(worker(), &InspectorWorker::progress);
    const TrainingStateResult r = trainingState();
    QVERIFY(!r.path.isEmpty());
    auto index = inspect::CheckpointIndex::open(
        fixtures_->path(QStringLiteral("openflamingo_train.pt")).toStdString());
    QVERIFY(index.isOk());
    auto want = inspect::readTrainingState(*index);
    QVERIFY2(want.isOk(), want.status().message().c_str());
    QCOMPARE(QString::fromStdString(inspect::formatTrainingState(r.state)),
             QString::fromStdString(inspect::formatTrainingState(*want)));
    QVERIFY(!progress.isEmpty());  // the moments' bytes, as read

    // torch's own figures (make_checkpoints.py's expected.json).
    const QJsonObject torch = fixtures_->expected()[QStringLiteral("state")].toObject();
    QCOMPARE(r.state.epoch.value_or(-1), torch[QStringLiteral("epoch")].toInteger());
    QVERIFY(r.state.optimizer && r.state.scheduler);
    const QJsonArray groups = torch[QStringLiteral("groups")].toArray();
    QCOMPARE(r.state.optimizer->groups.size(), static_cast<std::size_t>(groups.size()));
    for (qsizetype g = 0; g < groups.size(); ++g) {
      const QJsonObject want = groups[g].toObject();
      const inspect::OptimizerGroup& got = r.state.optimizer->groups[static_cast<std::size_t>(g)];
      QCOMPARE(got.lr, want[QStringLiteral("lr")].toDouble());
      QCOMPARE(got.weightDecay, want[QStringLiteral("weight_decay")].toDouble());
      QCOMPARE(got.params, static_cast<std::size_t>(want[QStringLiteral("params")].toInt()));
    }
    const QJsonArray params = torch[QStringLiteral("params")].toArray();
    QCOMPARE(r.state.optimizer->params.size(), static_cast<std::size_t>(params.size()));
    for (qsizetype i = 0; i < params.size(); ++i) {
      const QJsonObject want = params[i].toObject();
      const inspect::OptimizerParamState& got = r.state.optimizer->params[static_cast<std::size_t>(i)];
      QCOMPARE(QString::fromStdString(got.name), want[QStringLiteral("name")].toString());
      QVERIFY(got.expAvgNorm && got.expAvgSqNorm);
      QVERIFY(std::abs(*got.expAvgNorm - want[QStringLiteral("exp_avg_norm")].toDouble()) <=
              1e-6 * std::max(1.0, *got.expAvgNorm));
      QVERIFY(std::abs(*got.expAvgSqNorm - want[QStringLiteral("exp_avg_sq_norm")].toDouble()) <=
              1e-6 * std::max(1.0, *got.expAvgSqNorm));
    }
    QCOMPARE(r.state.scheduler->lastEpoch.value_or(-1),
             torch[QStringLiteral("scheduler")].toObject()[QStringLiteral("last_epoch")].toInteger());
    QVERIFY(r.dataPosition.isEmpty());  // OpenFlamingo's carries none
  }

  void trainingStateCancelsAndFailsNamingTheEntry() {
    QVERIFY(open(QStringLiteral("openflamingo_train.pt")));
    // Cancel on the first progress (a moment read): the next tensor read stops it.
    connect(
        worker(), &InspectorWorker::progress, worker(), [this] { worker()->cancel(); }, Qt::DirectConnection);
    QSignalSpy failed(worker(), &InspectorWorker::failed);
    QSignalSpy ready(worker(), &InspectorWorker::trainingStateReady);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t] { w->trainingState(t); });
    QVERIFY(test::waitForSignal(failed));
    QCOMPARE(ready.count(), 0);
    QCOMPARE(failed.at(0).at(1).value<InspectorTask>(), InspectorTask::kTrainingState);
    QVERIFY(failed.at(0).at(3).toBool());
    disconnect(worker(), &InspectorWorker::progress, worker(), nullptr);
    QVERIFY(!trainingState().path.isEmpty());  // the next one runs to its end

    QVERIFY(open(QStringLiteral("ours.pt")));
    failed.clear();
    const quint64 t2 = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t2] { w->trainingState(t2); });
    QVERIFY(test::waitForSignal(failed));
    const QString message = failed.at(0).at(2).toString();
    QVERIFY2(message.contains(fixtures_->path(QStringLiteral("ours.pt")) +
                              QStringLiteral(": flamingo_studio.data_position")),
             qPrintable(message));
    QVERIFY(!failed.at(0).at(3).toBool());
  }

 private:
  InspectorWorker* worker() const { return thread_->worker(); }

  CheckpointModelPtr open(const QString& name) {
    QSignalSpy opened(worker(), &InspectorWorker::opened);
    QSignalSpy failed(worker(), &InspectorWorker::failed);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t, p = fixtures_->path(name)] { w->open(t, p); });
    if (!test::waitForSignal(opened) || opened.isEmpty()) {
      qWarning() << failed;
      return {};
    }
    return opened.at(0).at(1).value<CheckpointModelPtr>();
  }

  StatsResult stats(const StatsTarget& target) {
    QSignalSpy ready(worker(), &InspectorWorker::statsReady);
    QSignalSpy failed(worker(), &InspectorWorker::failed);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t, target] { w->stats(t, target); });
    if (!test::waitForSignal(ready)) {
      if (!failed.isEmpty()) qWarning() << failed.at(0).at(2).toString();
      return {};
    }
    return ready.at(0).at(1).value<StatsResult>();
  }

  TrainingStateResult trainingState() {
    QSignalSpy ready(worker(), &InspectorWorker::trainingStateReady);
    QSignalSpy failed(worker(), &InspectorWorker::failed);
    const quint64 t = worker()->newTicket();
    QMetaObject::invokeMethod(worker(), [w = worker(), t] { w->trainingState(t); });
    for (int i = 0; i < 6000 && ready.isEmpty() && failed.isEmpty(); ++i) ready.wait(10);
    if (ready.isEmpty()) {
      if (!failed.isEmpty()) qWarning() << failed.at(0).at(2).toString();
      return {};
    }
    return ready.at(0).at(1).value<TrainingStateResult>();
  }

  static std::size_t find(const CheckpointModel& model, const std::string& name) {
    for (std::size_t i = 0; i < model.tensors.size(); ++i) {
      if (model.tensors[i].name == name) return i;
    }
    return model.tensors.size();
  }

  std::unique_ptr<test::CheckpointFixtures> fixtures_;
  std::unique_ptr<WorkerThread<InspectorWorker>> thread_;
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::InspectorWorkerTest)
#include "inspector_worker_test.moc"

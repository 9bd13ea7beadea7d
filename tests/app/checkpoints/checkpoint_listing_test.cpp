// The GUI's view of sharded checkpoints (app/checkpoints, app/history) on a
// real one: a 2-rank FSDP run of `flamingo-train launch` with
// checkpoint.format: sharded, started once for the whole suite.
//  - listed as a checkpoint with the bytes the engine's checkpoint event
//    reports (every rank file and index.json), complete, offered for resume;
//  - its tensors from index.json agree with the run's layout event (unit by
//    unit parameter counts, frozen counts);
//  - the history's import of the run directory names the directory and its
//    total bytes;
//  - a ".partial" directory is not listed; copies with a rank file or
//    index.json removed are listed as incomplete naming the file, and not
//    offered; index.json of an unknown version or missing a field is refused
//    naming the file and the field.
#include "app/checkpoints/checkpoint_listing.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "app/checkpoints/sharded_index_reader.h"
#include "app/history/run_dir_reader.h"
#include "backend/protocol/wire/event_codec.h"
#include "tests/backend/distributed/rank_processes.h"

namespace fs::app {
namespace {

std::vector<protocol::Event> readEvents(const QString& runDir) {
  QFile f(QDir(runDir).filePath(QStringLiteral("events.jsonl")));
  if (!f.open(QIODevice::ReadOnly)) return {};
  protocol::EventDecoder decoder;
  std::vector<protocol::Event> out;
  for (const auto& line : decoder.feed(f.readAll().toStdString())) {
    if (line.kind == protocol::DecodedLine::Kind::kEvent) out.push_back(line.event);
  }
  return out;
}

const CheckpointOnDisk* find(const QList<CheckpointOnDisk>& list, const QString& name) {
  for (const auto& c : list) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void copyDirectory(const QString& from, const QString& to) {
  QVERIFY(QDir().mkpath(to));
  for (const QFileInfo& f : QDir(from).entryInfoList(QDir::Files)) {
    QVERIFY(QFile::copy(f.absoluteFilePath(), QDir(to).filePath(f.fileName())));
  }
}

}  // namespace

class CheckpointListingTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void listsTheShardedDirectoryWithTheEnginesBytes();
  void readsTheTensorsTheLayoutEventDescribes();
  void historyNamesTheDirectoryAndItsBytes();
  void incompleteCopiesAreListedButNotOffered();
  void aBadIndexIsRefusedNamingTheField();

 private:
  QTemporaryDir tmp_;
  QString run_;         // the run directory
  QString checkpoint_;  // its final (epoch) checkpoint: a sharded directory
};

void CheckpointListingTest::initTestCase() {
  QVERIFY(tmp_.isValid());
  run_ = tmp_.filePath(QStringLiteral("run"));
  // 2 ranks x (2 LAION + 2 MMC4) per step, 2 steps; a step checkpoint each step and the epoch's.
  const QStringList sets = {"data.source=synthetic",
                            "model.lm.family=llama",
                            "optim.epochs=1",
                            "data.datasets[0].batch_size=2",
                            "data.datasets[0].samples_per_epoch=8",
                            "data.datasets[1].batch_size=2",
                            "data.datasets[1].samples_per_epoch=8",
                            "launch.threads_per_rank=1",
                            "parallel.mode=fsdp",
                            "checkpoint.format=sharded",
                            "checkpoint.every_steps=1",
                            "checkpoint.keep_last=5",
                            "parallel.collective_timeout_s=60",
                            "parallel.preflight_timeout_s=60"};
  QStringList args = {"launch",
                      "--nproc-per-node",
                      "2",
                      "--master-port",
                      QString::number(fs::testing::freePort()),
                      "--run-dir",
                      run_,
                      "--",
                      "train",
                      "--config",
                      QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml")};
  for (const QString& s : sets) args << "--set" << s;
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN), args);
  QVERIFY2(p.waitForFinished(300000), "flamingo-train did not finish in 5 minutes");
  QVERIFY2(p.exitCode() == 0, p.readAll().constData());
  checkpoint_ = QDir(run_).filePath(QStringLiteral("checkpoint_0.pt"));
  QVERIFY2(QFileInfo(checkpoint_).isDir(), "checkpoint.format sharded writes a directory");
}

void CheckpointListingTest::listsTheShardedDirectoryWithTheEnginesBytes() {
  const CheckpointListing listing = listCheckpoints(run_);
  QVERIFY2(listing.error.isEmpty(), qPrintable(listing.error));
  int events = 0;
  for (const auto& e : readEvents(run_)) {
    const auto* ev = std::get_if<protocol::CheckpointEvent>(&e.body);
    if (!ev) continue;
    ++events;
    const QString name = QString::fromStdString(ev->path);
    const CheckpointOnDisk* c = find(listing.checkpoints, name);
    QVERIFY2(c, qPrintable(name + " is not listed"));
    QVERIFY(c->sharded);
    QVERIFY2(c->isComplete(), qPrintable(c->problem));
    QCOMPARE(c->bytes, ev->bytes);  // the engine's own count: rank files + index.json
    QCOMPARE(c->kind, QString::fromUtf8(protocol::toString(ev->kind).data()));
    QVERIFY(find(resumableCheckpoints(listing), name));
  }
  QCOMPARE(events, 3);  // steps 1 and 2, and the epoch
  QCOMPARE(listing.checkpoints.size(), 3);
}

void CheckpointListingTest::readsTheTensorsTheLayoutEventDescribes() {
  const ShardedIndexRead index = readShardedIndex(checkpoint_);
  QVERIFY2(index.ok(), qPrintable(index.error));
  QCOMPARE(index.info.worldSize, 2);
  QCOMPARE(index.info.strategy, QStringLiteral("full_shard"));
  QCOMPARE(index.info.files, QStringList({"rank-0.pt", "rank-1.pt"}));
  QCOMPARE(index.info.resumeKind, QStringLiteral("epoch"));
  QCOMPARE(index.info.step, 2);
  QHash<QString, qint64> params, frozen;
  for (const auto& t : index.info.parameters) {
    params[t.unit] += t.numel;
    if (!t.trainable) frozen[t.unit] += t.numel;
    QCOMPARE(t.bytes, t.numel * 4);  // fp32
  }
  const protocol::LayoutEvent* layout = nullptr;
  const auto events = readEvents(run_);
  for (const auto& e : events) {
    if (const auto* l = std::get_if<protocol::LayoutEvent>(&e.body)) layout = l;
  }
  QVERIFY(layout);
  QCOMPARE(params.size(), static_cast<qsizetype>(layout->units.size()));
  for (const auto& u : layout->units) {
    // The layout event names the root unit "", the index (as the model's units do) "(root)".
    const QString path = u.path.empty() ? QStringLiteral("(root)") : QString::fromStdString(u.path);
    QVERIFY2(params.contains(path), qPrintable("no tensor of unit '" + path + "'"));
    QCOMPARE(params[path], u.param_count);
    QCOMPARE(frozen.value(path), u.frozen_params);
  }
}

void CheckpointListingTest::historyNamesTheDirectoryAndItsBytes() {
  const auto import = readRunDirectory(run_);
  QVERIFY2(import.isOk(), import.status().message().c_str());
  const CheckpointListing listing = listCheckpoints(run_);
  QCOMPARE(import->record.checkpoints.size(), 3);
  for (const CheckpointEntry& e : import->record.checkpoints) {
    const CheckpointOnDisk* c = find(listing.checkpoints, e.path);
    QVERIFY2(c, qPrintable(e.path));
    QCOMPARE(e.bytes, c->bytes);
  }
}

void CheckpointListingTest::incompleteCopiesAreListedButNotOffered() {
  const QString dir = tmp_.filePath(QStringLiteral("damaged"));
  copyDirectory(checkpoint_, QDir(dir).filePath(QStringLiteral("checkpoint_step1.pt")));
  QVERIFY(QFile::remove(QDir(dir).filePath(QStringLiteral("checkpoint_step1.pt/rank-1.pt"))));
  copyDirectory(checkpoint_, QDir(dir).filePath(QStringLiteral("checkpoint_step2.pt")));
  QVERIFY(QFile::remove(QDir(dir).filePath(QStringLiteral("checkpoint_step2.pt/index.json"))));
  // What a write in progress looks like (no index.json yet), and a complete copy.
  copyDirectory(checkpoint_, QDir(dir).filePath(QStringLiteral(".checkpoint_step3.pt.partial")));
  copyDirectory(checkpoint_, QDir(dir).filePath(QStringLiteral("checkpoint_0.pt")));

  const CheckpointListing listing = listCheckpoints(dir);
  QCOMPARE(listing.checkpoints.size(), 3);
  const CheckpointOnDisk* noRank = find(listing.checkpoints, QStringLiteral("checkpoint_step1.pt"));
  QVERIFY(noRank && noRank->problem.contains(QStringLiteral("checkpoint_step1.pt/rank-1.pt: missing")));
  const CheckpointOnDisk* noIndex = find(listing.checkpoints, QStringLiteral("checkpoint_step2.pt"));
  QVERIFY(noIndex && noIndex->problem.contains(QStringLiteral("checkpoint_step2.pt/index.json: missing")));
  const auto offered = resumableCheckpoints(listing);
  QCOMPARE(offered.size(), 1);
  QCOMPARE(offered[0].name, QStringLiteral("checkpoint_0.pt"));
}

void CheckpointListingTest::aBadIndexIsRefusedNamingTheField() {
  QFile f(QDir(checkpoint_).filePath(QStringLiteral("index.json")));
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray real = f.readAll();
  QVERIFY(parseShardedIndex(real, QStringLiteral("index.json")).ok());
  auto edited = [&](const std::function<void(QJsonObject&)>& edit) {
    QJsonObject o = QJsonDocument::fromJson(real).object();
    edit(o);
    return parseShardedIndex(QJsonDocument(o).toJson(), QStringLiteral("c/index.json")).error;
  };
  QCOMPARE(edited([](QJsonObject& o) { o[QStringLiteral("version")] = 2; }),
           QStringLiteral(
               "c/index.json: version: 2 is not a version this build reads (1); a newer Flamingo Studio "
               "wrote it"));
  QCOMPARE(edited([](QJsonObject& o) { o.remove(QStringLiteral("parameter_order")); }),
           QStringLiteral("c/index.json: parameter_order: missing"));
  QString unitsError = edited([](QJsonObject& o) {
    QJsonArray units = o[QStringLiteral("units")].toArray();
    QJsonObject u = units[0].toObject();
    QJsonArray flats = u[QStringLiteral("flats")].toArray();
    QJsonObject flat = flats[0].toObject();
    flat.remove(QStringLiteral("members"));
    flats[0] = flat;
    u[QStringLiteral("flats")] = flats;
    units[0] = u;
    o[QStringLiteral("units")] = units;
  });
  QCOMPARE(unitsError, QStringLiteral("c/index.json: units[0].flats[0].members: missing"));
  QVERIFY(parseShardedIndex("{\"format\": ", QStringLiteral("c/index.json"))
              .error.startsWith("c/index.json: not JSON"));
}

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::CheckpointListingTest)
#include "checkpoint_listing_test.moc"

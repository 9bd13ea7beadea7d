// ConfigDocument: edits through the schema, validation, diff against the
// defaults, the dataset list, and YAML load / save on the worker thread.
#include "app/config/config_document.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/validate.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

bool hasProblemAt(const ConfigDocument& doc, const std::string& path, bool error) {
  for (const auto& p : doc.problems()) {
    if (p.path == path && p.isError() == error) return true;
  }
  return false;
}

const FieldDiff* findDiff(const std::vector<FieldDiff>& diffs, const std::string& path) {
  for (const auto& d : diffs) {
    if (d.path == path) return &d;
  }
  return nullptr;
}

QString preset(const char* name) {
  return QStringLiteral(FS_SOURCE_DIR "/resources/presets/%1.yaml").arg(name);
}

}  // namespace

class ConfigDocumentTest : public QObject {
  Q_OBJECT

 private slots:
  void startsWithValidatedDefaults() {
    ConfigDocument doc;
    QVERIFY(doc.config() == proto::defaultRunConfig());
    QVERIFY(doc.problems() == proto::validateConfig(proto::defaultRunConfig()));
    QVERIFY(!doc.isModified());
    QVERIFY(doc.filePath().isEmpty());
    QVERIFY(doc.diffAgainstDefaults().empty());
  }

  void setFieldParsesThroughTheSchema() {
    ConfigDocument doc;
    QSignalSpy changed(&doc, &ConfigDocument::fieldChanged);
    QSignalSpy modified(&doc, &ConfigDocument::modifiedChanged);
    QVERIFY(doc.setField("optim.lr", "3e-4").isOk());
    QCOMPARE(doc.config().optim.lr, 3e-4);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.at(0).at(0).toString(), QStringLiteral("optim.lr"));
    QVERIFY(doc.isModified());
    QCOMPARE(modified.count(), 1);

    // The same value again changes nothing.
    QVERIFY(doc.setField("optim.lr", "0.0003").isOk());
    QCOMPARE(changed.count(), 1);

    // Exact int64 beyond int range; "1e8" style integers.
    QVERIFY(doc.setField("data.datasets[0].samples_per_epoch", "5000000000").isOk());
    QCOMPARE(doc.config().data.datasets[0].samples_per_epoch, int64_t{5'000'000'000});
    QVERIFY(doc.setField("parallel.wrap_min_params", "1e8").isOk());
    QCOMPARE(doc.config().parallel.wrap_min_params, int64_t{100'000'000});

    // Lists by element name are reported with their canonical path.
    QVERIFY(doc.setField("data.datasets.mmc4.batch_size", "7").isOk());
    QCOMPARE(doc.config().data.datasets[1].batch_size, int64_t{7});
    QCOMPARE(changed.last().at(0).toString(), QStringLiteral("data.datasets[1].batch_size"));
  }

  void rejectedTextChangesNothing() {
    ConfigDocument doc;
    QSignalSpy changed(&doc, &ConfigDocument::fieldChanged);
    const proto::Status bad = doc.setField("optim.lr", "fast");
    QVERIFY(!bad.isOk());
    QVERIFY2(bad.message().find("optim.lr") != std::string::npos, bad.message().c_str());
    const proto::Status unknown = doc.setField("optim.learning_rate", "1");
    QVERIFY(!unknown.isOk());
    QVERIFY2(unknown.message().find("unknown") != std::string::npos, unknown.message().c_str());
    const proto::Status mismatch = doc.setFieldValue("optim.lr", proto::Value(std::string("1")));
    QVERIFY(!mismatch.isOk());
    QCOMPARE(changed.count(), 0);
    QVERIFY(!doc.isModified());
    QVERIFY(doc.config() == proto::defaultRunConfig());
  }

  void disallowedValueIsKeptAndReportedAtItsPath() {
    ConfigDocument doc;
    QSignalSpy problems(&doc, &ConfigDocument::problemsChanged);
    QVERIFY(!hasProblemAt(doc, "data.datasets[0].batch_size", true));
    QVERIFY(doc.setField("data.datasets[0].batch_size", "0").isOk());
    QCOMPARE(doc.config().data.datasets[0].batch_size, int64_t{0});
    QVERIFY(problems.count() >= 1);
    QVERIFY(hasProblemAt(doc, "data.datasets[0].batch_size", true));
    QVERIFY(doc.errorCount() >= 1);

    QVERIFY(doc.setField("optim.precision", "fp8").isOk());
    QVERIFY(hasProblemAt(doc, "optim.precision", true));
    QVERIFY(!doc.checkFieldText("optim.precision", "fp8").empty());
    QVERIFY(doc.checkFieldText("optim.precision", "bf16").empty());
    QVERIFY(!doc.checkFieldText("optim.lr", "x").empty());
    QVERIFY(!doc.checkFieldText("optim.lr", "11").empty());  // max 10
  }

  void appliesWhenFollowsTheSibling() {
    ConfigDocument doc;  // defaults: datasets[0] laion, datasets[1] mmc4
    QVERIFY(!doc.fieldApplies("data.datasets[0].textsim_threshold"));
    QVERIFY(!doc.fieldApplies("data.datasets[0].max_num_images"));
    QVERIFY(doc.fieldApplies("data.datasets[0].batch_size"));
    QVERIFY(doc.fieldApplies("data.datasets[1].textsim_threshold"));
    QVERIFY(doc.setField("data.datasets[0].type", "mmc4").isOk());
    QVERIFY(doc.fieldApplies("data.datasets[0].textsim_threshold"));
    QVERIFY(doc.fieldApplies("optim.lr"));
  }

  void datasetsAddAndRemove() {
    ConfigDocument doc;
    QSignalSpy structure(&doc, &ConfigDocument::datasetsChanged);
    QCOMPARE(doc.listSize("data.datasets"), 2);
    QCOMPARE(doc.addDataset("laion"), 2);
    QCOMPARE(doc.addDataset("laion"), 3);
    QCOMPARE(doc.config().data.datasets[2].name, std::string("laion-2"));
    QCOMPARE(doc.config().data.datasets[3].name, std::string("laion-3"));
    QCOMPARE(doc.config().data.datasets[2].batch_size, proto::defaultDataset("x", "laion").batch_size);
    QCOMPARE(doc.listSize("data.datasets"), 4);
    QCOMPARE(structure.count(), 2);
    QVERIFY(doc.removeDataset(0));
    QCOMPARE(doc.config().data.datasets[0].name, std::string("mmc4"));
    QVERIFY(!doc.removeDataset(5));
    QVERIFY(!doc.removeDataset(-1));
    QCOMPARE(structure.count(), 3);
    QCOMPARE(doc.listSize("optim.lr"), 0);
    QCOMPARE(doc.listSize("nope"), 0);

    while (!doc.config().data.datasets.empty()) QVERIFY(doc.removeDataset(0));
    QVERIFY(hasProblemAt(doc, "data.datasets", true));
  }

  void diffAgainstDefaults() {
    ConfigDocument doc;
    QVERIFY(doc.setField("optim.lr", "0.001").isOk());
    QVERIFY(doc.setField("data.datasets[1].batch_size", "3").isOk());
    doc.addDataset("mmc4");
    auto diffs = doc.diffAgainstDefaults();
    const FieldDiff* lr = findDiff(diffs, "optim.lr");
    QVERIFY(lr != nullptr);
    QCOMPARE(std::stod(lr->defaultText.value()), 1e-4);  // the schema's text form, e.g. "1e-04"
    QCOMPARE(std::stod(lr->currentText.value()), 1e-3);
    QCOMPARE(findDiff(diffs, "data.datasets[1].batch_size")->currentText.value(), std::string("3"));
    const FieldDiff* added = findDiff(diffs, "data.datasets[2].name");
    QVERIFY(added != nullptr);
    QVERIFY(!added->defaultText.has_value());
    QCOMPARE(added->currentText.value(), std::string("mmc4-2"));
    QVERIFY(findDiff(diffs, "optim.epochs") == nullptr);

    QVERIFY(doc.removeDataset(2));
    QVERIFY(doc.removeDataset(1));
    diffs = doc.diffAgainstDefaults();
    const FieldDiff* removed = findDiff(diffs, "data.datasets[1].type");
    QVERIFY(removed != nullptr);
    QCOMPARE(removed->defaultText.value(), std::string("mmc4"));
    QVERIFY(!removed->currentText.has_value());
  }

  void saveThenLoadRoundTripsOnTheWorker() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("run.yaml"));
    ConfigDocument doc;
    QVERIFY(doc.setField("optim.lr", "2.5e-5").isOk());
    QVERIFY(doc.setField("parallel.wrap_patterns", "a.*, b.c").isOk());
    doc.addDataset("mmc4");
    QSignalSpy saved(&doc, &ConfigDocument::saved);
    doc.saveFile(path);
    QVERIFY(saved.wait(5000));
    QCOMPARE(saved.at(0).at(0).toString(), path);
    QCOMPARE(doc.filePath(), path);
    QVERIFY(!doc.isModified());

    ConfigDocument other;
    QThread* loadedOn = nullptr;
    connect(&other, &ConfigDocument::loaded, this, [&loadedOn] { loadedOn = QThread::currentThread(); });
    QSignalSpy reset(&other, &ConfigDocument::configReset);
    QSignalSpy loaded(&other, &ConfigDocument::loaded);
    other.loadFile(path);
    QVERIFY(loaded.wait(5000));
    QCOMPARE(loadedOn, QThread::currentThread());  // results are delivered on the document's thread
    QCOMPARE(reset.count(), 1);
    QVERIFY(other.config() == doc.config());
    QCOMPARE(other.filePath(), path);
    QVERIFY(!other.isModified());
  }

  void editDuringSaveStaysModified() {
    QTemporaryDir dir;
    ConfigDocument doc;
    QVERIFY(doc.setField("seed", "7").isOk());
    QSignalSpy saved(&doc, &ConfigDocument::saved);
    doc.saveFile(dir.filePath(QStringLiteral("a.yaml")));
    QVERIFY(doc.setField("seed", "8").isOk());  // after the snapshot, before the result
    QVERIFY(saved.wait(5000));
    QVERIFY(doc.isModified());
    auto reread =
        proto::loadConfigFile(QFile::encodeName(dir.filePath(QStringLiteral("a.yaml"))).toStdString());
    QVERIFY(reread.ok());
    QCOMPARE(reread.config.seed, int64_t{7});
  }

  void saveAskedForBeforeDestructionIsWritten() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("last.yaml"));
    {
      ConfigDocument doc;
      QVERIFY(doc.setField("seed", "99").isOk());
      doc.saveFile(path);
    }  // destroyed before the result could be delivered
    auto reread = proto::loadConfigFile(QFile::encodeName(path).toStdString());
    QVERIFY(reread.ok());
    QCOMPARE(reread.config.seed, int64_t{99});
  }

  void loadAndSaveFailuresAreSignals() {
    QTemporaryDir dir;
    ConfigDocument doc;
    QSignalSpy loadFailed(&doc, &ConfigDocument::loadFailed);
    const QString missing = dir.filePath(QStringLiteral("missing.yaml"));
    doc.loadFile(missing);
    QVERIFY(loadFailed.wait(5000));
    QCOMPARE(loadFailed.at(0).at(0).toString(), missing);
    QVERIFY(!loadFailed.at(0).at(1).toString().isEmpty());

    const QString bad = dir.filePath(QStringLiteral("bad.yaml"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("optim:\n  lr: fast\n  learning_rat: 1\n");
    f.close();
    doc.loadFile(bad);
    QVERIFY(loadFailed.wait(5000));
    const QString message = loadFailed.at(1).at(1).toString();
    QVERIFY2(message.contains(QStringLiteral("optim.lr")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("learning_rat")), qPrintable(message));
    QVERIFY(doc.config() == proto::defaultRunConfig());  // a failed load leaves the document alone

    QSignalSpy saveFailed(&doc, &ConfigDocument::saveFailed);
    doc.saveFile(dir.filePath(QStringLiteral("no/such/dir/x.yaml")));
    QVERIFY(saveFailed.wait(5000));
    QVERIFY(!saveFailed.at(0).at(1).toString().isEmpty());
    QVERIFY(doc.filePath().isEmpty());
  }

  void loadsEveryPreset() {
    for (const char* name : {"tiny", "small", "openflamingo-3b-vitl-mpt1b", "openflamingo-4b-vitl-rpj3b",
                             "openflamingo-9b-vitl-mpt7b"}) {
      ConfigDocument doc;
      QSignalSpy loaded(&doc, &ConfigDocument::loaded);
      doc.loadFile(preset(name));
      QVERIFY2(loaded.wait(5000), name);
      auto direct = proto::loadConfigFile(QFile::encodeName(preset(name)).toStdString());
      QVERIFY(doc.config() == direct.config);
    }
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ConfigDocumentTest)
#include "config_document_test.moc"

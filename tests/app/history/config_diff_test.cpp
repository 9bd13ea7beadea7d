// ConfigDiff: configs differing in a scalar, in one dataset entry, in the
// number of datasets, and not at all.
#include "app/history/config_diff.h"

#include <QtTest>
#include <vector>

#include "backend/protocol/config/config_types.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;

// Two datasets, so the list has more than one element to compare.
proto::RunConfig baseConfig() {
  proto::RunConfig c = proto::defaultRunConfig();
  c.data.datasets = {proto::defaultDataset("laion", "laion"), proto::defaultDataset("mmc4", "mmc4")};
  return c;
}

QStringList paths(const QList<ConfigDiffField>& diff) {
  QStringList out;
  for (const auto& f : diff) out << f.path;
  return out;
}

}  // namespace

class ConfigDiffTest : public QObject {
  Q_OBJECT

 private slots:
  void identicalConfigsHaveNoDifference() {
    const std::vector<proto::RunConfig> configs = {baseConfig(), baseConfig(), baseConfig()};
    QVERIFY(diffConfigs(configs).isEmpty());
  }

  void fewerThanTwoConfigsHaveNoDifference() {
    const std::vector<proto::RunConfig> one = {baseConfig()};
    QVERIFY(diffConfigs(one).isEmpty());
    QVERIFY(diffConfigs({}).isEmpty());
  }

  void aScalarDiffersInOneOfThree() {
    std::vector<proto::RunConfig> configs = {baseConfig(), baseConfig(), baseConfig()};
    configs[2].optim.lr = 3e-4;
    configs[2].seed = 7;
    const auto diff = diffConfigs(configs);
    QCOMPARE(paths(diff), (QStringList{"seed", "optim.lr"}));  // schema order
    const ConfigDiffField& lr = diff[1];
    QCOMPARE(lr.values.size(), 3);
    QCOMPARE(lr.values[0], lr.values[1]);
    QCOMPARE(*lr.values[2], QStringLiteral("3e-04"));  // the schema's text form (shortest)
    QCOMPARE(*diff[0].values[2], QStringLiteral("7"));
  }

  void aDatasetEntryIsComparedByElement() {
    std::vector<proto::RunConfig> configs = {baseConfig(), baseConfig()};
    configs[1].data.datasets[1].batch_size = configs[0].data.datasets[1].batch_size + 4;
    const auto diff = diffConfigs(configs);
    QCOMPARE(paths(diff), (QStringList{"data.datasets[1].batch_size"}));
    QCOMPARE(*diff[0].values[1], QString::number(configs[1].data.datasets[1].batch_size));
  }

  void aMissingDatasetShowsAsAbsentInSchemaOrder() {
    std::vector<proto::RunConfig> configs = {baseConfig(), baseConfig()};
    configs[0].data.datasets.pop_back();  // the first run trained on laion only
    const auto diff = diffConfigs(configs);
    QVERIFY(!diff.isEmpty());
    for (const auto& f : diff) {
      QVERIFY2(f.path.startsWith(QStringLiteral("data.datasets[1].")), qPrintable(f.path));
      QVERIFY(!f.values[0].has_value());
      QVERIFY(f.values[1].has_value());
    }
    QCOMPARE(diff[0].path, QStringLiteral("data.datasets[1].name"));
    QCOMPARE(*diff[0].values[1], QStringLiteral("mmc4"));
    // The element's fields come where the schema puts the list, before optim.*:
    // run a second diff that also differs in optim.lr and check the order.
    configs[1].optim.lr = 1.0;
    const auto both = diffConfigs(configs);
    QCOMPARE(both.last().path, QStringLiteral("optim.lr"));
  }

  void listFieldsCompareAsText() {
    std::vector<proto::RunConfig> configs = {baseConfig(), baseConfig()};
    configs[0].launch.hosts = {"a", "b"};
    configs[1].launch.hosts = {"a"};
    const auto diff = diffConfigs(configs);
    QCOMPARE(paths(diff), (QStringList{"launch.hosts"}));
    QCOMPARE(*diff[0].values[0], QStringLiteral("a,b"));
    QCOMPARE(*diff[0].values[1], QStringLiteral("a"));
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::ConfigDiffTest)
#include "config_diff_test.moc"

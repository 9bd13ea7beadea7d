// The series store filled from events through the batch builder: names, every x axis,
// carried samples, rewinds on a resumed run, batches split anywhere, one changed()
// per append.
#include "app/monitor/series_store.h"

#include <QSignalSpy>
#include <QtTest>
#include <cmath>

#include "app/monitor/series_names.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using testing::stepBody;

constexpr std::int64_t kT0 = 1717000000000;

proto::Event stepEvent(std::uint64_t seq, std::int64_t step, std::int64_t t_ms) {
  return proto::Event{seq, t_ms, stepBody(step)};
}

std::vector<double> toVector(std::span<const double> s) {
  return {s.begin(), s.end()};
}

}  // namespace

class SeriesStoreTest : public QObject {
  Q_OBJECT

 private slots:
  void fillsEverySeriesFromEvents() {
    SeriesBatchBuilder builder;
    builder.addEvent(
        {0, kT0, proto::RunStartedEvent{"r", "0.1.0", 2, 1, {"h"}, "x", 10, 10, {"laion", "mmc4"}}});
    for (int step = 1; step <= 3; ++step) {
      proto::Event e = stepEvent(step, step, kT0 + 1000 * step);
      auto& s = std::get<proto::StepEvent>(e.body);
      if (step == 2) {
        s.samples.erase("mmc4");  // not reported: the last value carries on
        s.tokens.clear();
        s.grad_norm.reset();  // no point for grad_norm at step 2
        s.loss["laion"] = std::numeric_limits<double>::quiet_NaN();
      }
      builder.addEvent(e);
    }
    proto::MemoryEvent mem;
    mem.step = 3;
    mem.ranks.push_back({0, 100, 200, 10, 20, 30, 40, 50, 1000, 2000, 2});
    mem.ranks.back().device_reserved = 3000;
    mem.ranks.back().device_reserved_peak = 4000;
    mem.ranks.push_back({1, 101, 201, 11, 21, 31, 41, 51, std::nullopt, std::nullopt});
    builder.addEvent({4, kT0 + 3500, mem});
    builder.addEvent({5, kT0 + 3600, proto::ValidationEvent{3, {{"laion", 2.75}}, 1.5}});

    SeriesStore store;
    QSignalSpy changed(&store, &SeriesStore::changed);
    QSignalSpy added(&store, &SeriesStore::seriesAdded);
    store.append(builder.take());
    QCOMPARE(changed.count(), 1);
    QVERIFY(added.count() > 0);
    QCOMPARE(store.firstEventMs(), std::optional<std::int64_t>(kT0));

    const auto loss = toVector(store.y(series::loss("laion")));
    QCOMPARE(loss.size(), std::size_t{3});
    QCOMPARE(loss[0], 2.999);
    QVERIFY(std::isnan(loss[1]));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kStep, {}})), (std::vector<double>{1, 2, 3}));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kSamples, "laion"})),
             (std::vector<double>{8, 16, 24}));
    // mmc4 samples were not reported at step 2: 4 carries on.
    QCOMPARE(toVector(store.x(series::loss("mmc4"), {XKind::kSamples, "mmc4"})),
             (std::vector<double>{4, 4, 12}));
    QCOMPARE(toVector(store.x(series::loss("mmc4"), {XKind::kSamples, {}})),
             (std::vector<double>{12, 20, 36}));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kTokens, "laion"})),
             (std::vector<double>{256, 256, 768}));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kTokens, "nowhere"})),
             (std::vector<double>{0, 0, 0}));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kWallTime, {}})),
             (std::vector<double>{kT0 / 1000.0 + 1, kT0 / 1000.0 + 2, kT0 / 1000.0 + 3}));
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kRelativeTime, {}})),
             (std::vector<double>{1, 2, 3}));

    QCOMPARE(toVector(store.y(series::kGradNorm)), (std::vector<double>{0.5, 0.5}));
    QCOMPARE(toVector(store.x(series::kGradNorm, {XKind::kStep, {}})), (std::vector<double>{1, 3}));
    QCOMPARE(toVector(store.y(series::rankLoss("laion", 1))), (std::vector<double>{3.1, 3.1, 3.1}));
    QCOMPARE(toVector(store.y(series::gateAttn(4))), (std::vector<double>{0.03, 0.03, 0.03}));
    QCOMPARE(toVector(store.y(series::gateFf(0))), (std::vector<double>{0.02, 0.02, 0.02}));
    QCOMPARE(toVector(store.y(series::samplesPerSecond("mmc4"))), (std::vector<double>{4, 4, 4}));
    QCOMPARE(toVector(store.y(series::kLr)).size(), std::size_t{3});
    QCOMPARE(toVector(store.y(series::kStepTime)).size(), std::size_t{3});
    QCOMPARE(toVector(store.y(series::kDataTime)), (std::vector<double>{0.125, 0.125, 0.125}));

    QCOMPARE(toVector(store.y(series::memory(0, "optimizer"))), (std::vector<double>{30}));
    QCOMPARE(toVector(store.y(series::memory(1, "activations"))), (std::vector<double>{51}));
    QCOMPARE(toVector(store.y(series::memory(0, "device_peak"))), (std::vector<double>{2000}));
    QCOMPARE(store.find(series::memory(1, "device")), SeriesStore::kNoSeries);
    QCOMPARE(toVector(store.y(series::memory(0, "device_reserved"))), (std::vector<double>{3000}));
    QCOMPARE(toVector(store.y(series::memory(0, "device_reserved_peak"))), (std::vector<double>{4000}));
    QCOMPARE(store.find(series::memory(1, "device_reserved")), SeriesStore::kNoSeries);
    QCOMPARE(toVector(store.y(series::memory(0, "gathered_units"))), (std::vector<double>{2}));
    QCOMPARE(store.find(series::memory(1, "gathered_units")), SeriesStore::kNoSeries);
    QCOMPARE(toVector(store.x(series::memory(0, "rss"), {XKind::kStep, {}})), (std::vector<double>{3}));
    QCOMPARE(toVector(store.x(series::memory(0, "rss"), {XKind::kSamples, "laion"})),
             (std::vector<double>{24}));
    QCOMPARE(toVector(store.y(series::validationLoss("laion"))), (std::vector<double>{2.75}));
    QCOMPARE(toVector(store.x(series::validationLoss("laion"), {XKind::kRelativeTime, {}})),
             (std::vector<double>{3.6}));
    QCOMPARE(store.y("no/such/series").size(), std::size_t{0});
  }

  void splitBatchesGiveTheSameStore() {
    // One batch, or a batch per event, or batches cut anywhere: the same arrays.
    std::vector<proto::Event> events;
    for (int step = 1; step <= 40; ++step) {
      proto::Event e = stepEvent(step - 1, step, kT0 + 1000 * step);
      if (step == 25) std::get<proto::StepEvent>(e.body).loss["cc3m"] = 9;  // a dataset appears late
      if (step >= 25) std::get<proto::StepEvent>(e.body).samples["cc3m"] = step;
      events.push_back(e);
    }
    auto fill = [&](SeriesStore& store, std::size_t cut_every) {
      SeriesBatchBuilder builder;
      for (std::size_t i = 0; i < events.size(); ++i) {
        builder.addEvent(events[i]);
        if ((i + 1) % cut_every == 0) store.append(builder.take());
      }
      store.append(builder.take());
    };
    SeriesStore whole, single, sevens;
    fill(whole, 1000);
    fill(single, 1);
    fill(sevens, 7);
    QCOMPARE(whole.names(), single.names());
    QCOMPARE(whole.names(), sevens.names());
    const XAxis axes[] = {{XKind::kStep, {}},       {XKind::kSamples, "cc3m"}, {XKind::kSamples, {}},
                          {XKind::kTokens, "mmc4"}, {XKind::kWallTime, {}},    {XKind::kRelativeTime, {}}};
    for (const std::string& name : whole.names()) {
      QCOMPARE(toVector(single.y(name)), toVector(whole.y(name)));
      QCOMPARE(toVector(sevens.y(name)), toVector(whole.y(name)));
      for (const XAxis& axis : axes) {
        QCOMPARE(toVector(single.x(name, axis)), toVector(whole.x(name, axis)));
        QCOMPARE(toVector(sevens.x(name, axis)), toVector(whole.x(name, axis)));
      }
    }
    QCOMPARE(toVector(whole.x(series::loss("laion"), {XKind::kSamples, "cc3m"})).at(23), 0.0);
    QCOMPARE(toVector(whole.x(series::loss("laion"), {XKind::kSamples, "cc3m"})).at(24), 25.0);
    QCOMPARE(whole.y(series::loss("cc3m")).size(), std::size_t{1});
  }

  void resumedRunRewindsToTheRepeatedStep() {
    SeriesBatchBuilder builder;
    SeriesStore store;
    for (int step = 1; step <= 10; ++step) builder.addEvent(stepEvent(step - 1, step, kT0 + 1000 * step));
    store.append(builder.take());
    // Read the x array once so its cache must shrink with the rewind.
    QCOMPARE(store.x(series::loss("laion"), {XKind::kStep, {}}).size(), std::size_t{10});
    QSignalSpy reset(&store, &SeriesStore::reset);
    QSignalSpy changed(&store, &SeriesStore::changed);
    // The run crashed after step 10 and resumed from a checkpoint at step 5.
    for (int step = 6; step <= 8; ++step)
      builder.addEvent(stepEvent(10 + step, step, kT0 + 60000 + 1000 * step));
    store.append(builder.take());
    QCOMPARE(reset.count(), 1);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(toVector(store.x(series::loss("laion"), {XKind::kStep, {}})),
             (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
    const auto wall = toVector(store.x(series::loss("laion"), {XKind::kWallTime, {}}));
    QVERIFY(std::is_sorted(wall.begin(), wall.end()));
    QCOMPARE(wall.back(), kT0 / 1000.0 + 68);
  }

  void rewindKeepsTheCutPointsAsAnAbandonedSegment() {
    SeriesBatchBuilder builder;
    SeriesStore store;
    for (int step = 1; step <= 10; ++step) builder.addEvent(stepEvent(step - 1, step, kT0 + 1000 * step));
    store.append(builder.take());
    const auto id = store.find(series::loss("laion"));
    QCOMPARE(store.abandonedCount(id), std::size_t{0});
    // A rollback to step 6: steps 7..10 are abandoned, then 7.. repeat.
    for (int step = 7; step <= 9; ++step)
      builder.addEvent(stepEvent(10 + step, step, kT0 + 20000 + 1000 * step));
    store.append(builder.take());
    QCOMPARE(store.abandonedCount(id), std::size_t{1});
    QCOMPARE(toVector(store.abandonedX(id, 0, {XKind::kStep, {}})), (std::vector<double>{7, 8, 9, 10}));
    const auto y = store.abandonedY(id, 0);
    QCOMPARE(y.size(), std::size_t{4});
    QCOMPARE(y[0], 3.0 - 0.001 * 7.0);  // step 7 of the first attempt
    QCOMPARE(toVector(store.abandonedX(id, 0, {XKind::kWallTime, {}})).front(), kT0 / 1000.0 + 7);
    // The curve that counts is the new attempt only, x non-decreasing.
    QCOMPARE(toVector(store.x(id, {XKind::kStep, {}})), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    QCOMPARE(toVector(store.x(id, {XKind::kWallTime, {}})).back(), kT0 / 1000.0 + 29);
  }

  void clearForgetsEverything() {
    SeriesBatchBuilder builder;
    SeriesStore store;
    builder.addEvent(stepEvent(0, 1, kT0));
    store.append(builder.take());
    QSignalSpy reset(&store, &SeriesStore::reset);
    store.clear();
    QCOMPARE(reset.count(), 1);
    QVERIFY(store.names().empty());
    QCOMPARE(store.rowCount(), std::size_t{0});
    QVERIFY(!store.firstEventMs());
  }
};

}  // namespace fs::app

QTEST_GUILESS_MAIN(fs::app::SeriesStoreTest)
#include "series_store_test.moc"

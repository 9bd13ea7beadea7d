// MeasuredMemoryTracker against the figures recomputed from scratch: long
// streams of memory events in random batches (ranks joining late or skipping
// events), resumed runs whose rewinds drop the peaks of the repeated steps,
// parts without one point per event, NaN, and clear(). Every comparison is
// also made with fromScratch(), the definition read off every stored point
// (what the Estimate tab computed on every batch before the tracker).
#include "app/monitor/measured_memory_tracker.h"

#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>

#include "app/monitor/series_batch.h"
#include "app/monitor/series_names.h"
#include "monitor_test_util.h"

namespace fs::app {
namespace {

namespace proto = fs::protocol;
using Bytes = MeasuredParts;

constexpr std::int64_t kT0 = 1717000000000;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Bytes partsOf(const proto::RankMemory& r) {
  return {r.params, r.grads, r.optimizer, r.gathered, r.activations};
}

std::string describe(const std::vector<MeasuredRank>& ranks) {
  std::ostringstream out;
  for (const auto& r : ranks) {
    out << "rank " << r.rank << " step " << r.step << " latest";
    for (const auto& part : kMeasuredParts) out << ' ' << r.latest.*part.field;
    out << " peak";
    for (const auto& part : kMeasuredParts) out << ' ' << r.peak.*part.field;
    out << " peakSum " << r.peakSum << " stepPeak " << r.latestStepPeak.value_or(-1) << ' '
        << r.stepPeak.value_or(-1) << "\n";
  }
  return out.str();
}

// A run's events through the batch builder, and the memory events the store keeps
// of them: a step event that does not go forward drops every memory event at its
// step or later (NOTE [Rewinds]).
class Run {
 public:
  void step(std::int64_t step) {
    if (last_step_ && step <= *last_step_) {
      std::erase_if(kept_, [&](const proto::MemoryEvent& m) { return m.step >= step; });
    }
    last_step_ = step;
    builder_.addEvent({seq_++, kT0 + step, testing::stepBody(step)});
  }
  void memory(proto::MemoryEvent m) {
    for (const auto& r : m.ranks) ranks_.insert(r.rank);
    kept_.push_back(m);
    builder_.addEvent({seq_++, kT0 + m.step, std::move(m)});
  }
  SeriesBatch take() { return builder_.take(); }

  // The figures, straight from the kept events. A rank whose points were all
  // rewound away still has its series in the store, so it is listed with zeros.
  std::vector<MeasuredRank> recompute() const {
    std::map<int, MeasuredRank> out;
    std::set<int> measured;
    for (int rank : ranks_) out[rank].rank = rank;
    for (const auto& e : kept_) {
      for (const auto& r : e.ranks) {
        MeasuredRank& m = out[r.rank];
        const Bytes parts = partsOf(r);
        m.step = e.step;
        m.latest = parts;
        std::int64_t sum = 0;
        for (const auto& part : kMeasuredParts) {
          m.peak.*part.field = std::max(m.peak.*part.field, parts.*part.field);
          sum += parts.*part.field;
        }
        m.peakSum = measured.insert(r.rank).second ? sum : std::max(m.peakSum, sum);
        if (r.step_peak) {
          m.latestStepPeak = *r.step_peak;
          m.stepPeak = std::max(m.stepPeak.value_or(0), *r.step_peak);
        }
      }
    }
    std::vector<MeasuredRank> v;
    for (auto& [rank, m] : out) v.push_back(m);
    return v;
  }

 private:
  SeriesBatchBuilder builder_;
  std::vector<proto::MemoryEvent> kept_;
  std::set<int> ranks_;
  std::optional<std::int64_t> last_step_;
  std::uint64_t seq_ = 0;
};

// Every rank's figures read off every point the store holds (the tracker's
// contract, computed the slow way).
std::vector<MeasuredRank> fromScratch(const SeriesStore& store) {
  std::map<int, MeasuredRank> ranks;
  for (const auto& name : store.names()) {
    const int rank = memorySeriesRank(name);
    if (rank >= 0) ranks[rank].rank = rank;
  }
  std::vector<MeasuredRank> out;
  for (auto& [rank, m] : ranks) {
    std::vector<std::int64_t> sums;  // per memory event: every part has one point per event
    bool aligned = true;
    for (const auto& part : kMeasuredParts) {
      const std::string name = series::memory(rank, part.category);
      const std::span<const double> y = store.y(name);
      if (y.empty()) continue;
      m.latest.*part.field = measuredBytes(y.back());
      std::int64_t peak = 0;
      for (double v : y) peak = std::max(peak, measuredBytes(v));
      m.peak.*part.field = peak;
      if (sums.empty()) sums.assign(y.size(), 0);
      if (y.size() != sums.size()) aligned = false;
      for (size_t i = 0; aligned && i < y.size(); ++i) sums[i] += measuredBytes(y[i]);
      const auto step = store.x(name, XAxis{});
      if (!step.empty()) m.step = static_cast<std::int64_t>(step.back());
    }
    m.peakSum = aligned && !sums.empty() ? *std::max_element(sums.begin(), sums.end()) : m.peak.sum();
    const std::span<const double> stepPeaks = store.y(series::memory(rank, kStepPeakCategory));
    if (!stepPeaks.empty()) {
      m.latestStepPeak = measuredBytes(stepPeaks.back());
      m.stepPeak = 0;
      for (double v : stepPeaks) m.stepPeak = std::max(*m.stepPeak, measuredBytes(v));
    }
    out.push_back(m);
  }
  return out;
}

// Memory figures that move the way a training's do: fixed model state, gathered
// and activations varying per step with rare spikes (the peaks to be kept).
class Figures {
 public:
  explicit Figures(std::uint64_t seed) : rng_(seed) {}
  proto::RankMemory rank(int rank) {
    proto::RankMemory r;
    r.rank = rank;
    r.rss_bytes = draw(1 << 30, 2 << 30);
    r.peak_bytes = r.rss_bytes;
    r.params = 100000 + rank;
    r.grads = draw(0, 3) == 0 ? 0 : 200000 + rank;  // between steps: freed
    r.optimizer = 400000;
    r.gathered = draw(0, 50000) + (draw(0, 500) == 0 ? 10000000 : 0);
    r.activations = draw(0, 80000) + (draw(0, 700) == 0 ? 20000000 : 0);
    // Absent now and then, as for the first step after a start.
    if (draw(0, 9) != 0) r.step_peak = 900000 + draw(0, 80000) + (draw(0, 600) == 0 ? 30000000 : 0);
    return r;
  }
  std::int64_t draw(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

class MeasuredMemoryTrackerTest : public QObject {
  Q_OBJECT

  // Appends what `run` built, updates, and checks both references.
  void appendAndCheck(Run& run, SeriesStore& store, MeasuredMemoryTracker& tracker,
                      bool from_scratch = true) {
    store.append(run.take());
    tracker.update(store);
    const auto expected = run.recompute();
    QVERIFY2(tracker.ranks() == expected,
             ("tracker:\n" + describe(tracker.ranks()) + "recomputed:\n" + describe(expected)).c_str());
    if (from_scratch) {
      const auto old = fromScratch(store);
      QVERIFY2(tracker.ranks() == old,
               ("tracker:\n" + describe(tracker.ranks()) + "from scratch:\n" + describe(old)).c_str());
    }
  }

  // 200k steps, a memory event every 10, 8 ranks (rank 6 from step 50k on,
  // rank 7 absent from every 7th event), in batches of 1 to 3000 events; when
  // `resumes`, the run goes back to an earlier step now and then, as a resumed
  // run does, sometimes twice in one batch.
  void followLongRun(std::uint64_t seed, bool resumes) {
    Figures figures(seed);
    Run run;
    SeriesStore store;
    MeasuredMemoryTracker tracker;
    std::int64_t batch_left = 1;
    int batches = 0;
    std::int64_t next_resume = 20000;
    for (std::int64_t step = 1; step <= 200000; ++step) {
      run.step(step);
      if (step % 10 == 0) {
        proto::MemoryEvent m;
        m.step = step;
        for (int r = 0; r < 8; ++r) {
          if (r == 6 && step < 50000) continue;
          if (r == 7 && (step / 10) % 7 == 0) continue;
          m.ranks.push_back(figures.rank(r));
        }
        run.memory(std::move(m));
      }
      if (resumes && step == next_resume) {
        step -= figures.draw(1, 3000);  // the loop's ++ makes it the checkpoint's step + 1
        next_resume += figures.draw(500, 15000);
      }
      if (--batch_left == 0) {
        appendAndCheck(run, store, tracker, ++batches % 8 == 0);
        if (QTest::currentTestFailed()) return;
        batch_left = figures.draw(1, 3000);
      }
    }
    appendAndCheck(run, store, tracker);
    QCOMPARE(tracker.ranks().size(), std::size_t{8});
  }

 private slots:
  void runningPeakForgetsWhatATruncationCutOff() {
    RunningPeak peak;
    QVERIFY(!peak.peak());
    const std::int64_t values[] = {5, 3, 9, 9, 2, 12, 1};
    for (std::size_t i = 0; i < std::size(values); ++i) peak.add(i, values[i]);
    QCOMPARE(*peak.peak(), std::int64_t{12});
    peak.truncate(5);  // 5 3 9 9 2
    QCOMPARE(*peak.peak(), std::int64_t{9});
    peak.truncate(2);  // 5 3
    QCOMPARE(*peak.peak(), std::int64_t{5});
    peak.add(2, 4);
    QCOMPARE(*peak.peak(), std::int64_t{5});
    peak.truncate(0);
    QVERIFY(!peak.peak());
    peak.add(0, -3);
    QCOMPARE(*peak.peak(), std::int64_t{-3});
  }

  void followsALongRun() { followLongRun(1, false); }
  void followsALongRunWithResumes() {
    followLongRun(2, true);
    if (QTest::currentTestFailed()) return;
    followLongRun(3, true);
  }

  // A rewind with no memory event after it in the batch (fewer points than
  // seen), and one followed by more memory events than it dropped (as many
  // points as seen or more, none of them the old ones).
  void aResumeDropsThePeakOfTheRepeatedSteps() {
    for (bool refill : {false, true}) {
      Run run;
      SeriesStore store;
      MeasuredMemoryTracker tracker;
      auto memory = [&](std::int64_t step, std::int64_t activations) {
        proto::MemoryEvent m;
        m.step = step;
        for (int r = 0; r < 2; ++r) m.ranks.push_back({r, 1, 1, 10, 20, 30, 40, activations + r});
        run.memory(std::move(m));
      };
      for (std::int64_t step = 1; step <= 300; ++step) {
        run.step(step);
        if (step % 10 == 0) memory(step, step == 200 ? 1000000 : step);
      }
      appendAndCheck(run, store, tracker);
      QCOMPARE(tracker.ranks()[0].peak.activations, std::int64_t{1000000});
      const std::int64_t until = refill ? 900 : 155;
      for (std::int64_t step = 151; step <= until; ++step) {
        run.step(step);
        if (step % 10 == 0) memory(step, 7);
      }
      appendAndCheck(run, store, tracker);
      QCOMPARE(tracker.ranks()[0].peak.activations, std::int64_t{150});
      QCOMPARE(tracker.ranks()[1].peakSum, std::int64_t{10 + 20 + 30 + 40 + 151});
      QCOMPARE(tracker.ranks()[0].step, std::int64_t{refill ? 900 : 150});
    }
  }

  // Everything rewound away: the ranks stay listed, with nothing measured.
  void aResumeBeforeTheFirstMemoryEventLeavesZeros() {
    Run run;
    SeriesStore store;
    MeasuredMemoryTracker tracker;
    run.step(1);
    run.step(2);
    run.memory({2, {{3, 1, 1, 10, 20, 30, 40, 50}}});
    appendAndCheck(run, store, tracker);
    run.step(1);
    appendAndCheck(run, store, tracker);
    QCOMPARE(tracker.ranks().size(), std::size_t{1});
    QVERIFY2(tracker.ranks()[0] == (MeasuredRank{3, 0, {}, {}, 0}), describe(tracker.ranks()).c_str());
  }

  // Never from the builder, but defined: parts with unequal point counts give
  // the sum of the peaks, NaN counts as 0, a rank with no part is all zeros.
  void partsWithoutOnePointPerEventSumTheirPeaks() {
    SeriesBatch batch;
    batch.rows.step = {1, 2, 3};
    batch.rows.t_ms = {kT0, kT0 + 1, kT0 + 2};
    batch.rows.from_step = {0, 0, 0};
    batch.series.push_back({series::memory(0, "params"), {0, 1, 2}, {10, kNaN, 5}});
    batch.series.push_back({series::memory(0, "grads"), {0, 1}, {7, 9}});
    batch.series.push_back({series::memory(2, "rss"), {0}, {1}});
    SeriesStore store;
    MeasuredMemoryTracker tracker;
    store.append(batch);
    tracker.update(store);
    std::vector<MeasuredRank> expected = {{0, 2, {5, 9, 0, 0, 0}, {10, 9, 0, 0, 0}, 19}, {2, 0, {}, {}, 0}};
    QVERIFY2(tracker.ranks() == expected, describe(tracker.ranks()).c_str());
    QVERIFY2(fromScratch(store) == expected, describe(fromScratch(store)).c_str());

    // grads catches up: one point per event again, so the sum of one event counts.
    SeriesBatch more;
    more.rows.step = {4};
    more.rows.t_ms = {kT0 + 3};
    more.rows.from_step = {0};
    more.series.push_back({series::memory(0, "grads"), {0}, {1}});
    store.append(more);
    tracker.update(store);
    expected[0] = {0, 4, {5, 1, 0, 0, 0}, {10, 9, 0, 0, 0}, 17};  // 10 + 7, 0 + 9, 5 + 1
    QVERIFY2(tracker.ranks() == expected, describe(tracker.ranks()).c_str());
    QVERIFY2(fromScratch(store) == expected, describe(fromScratch(store)).c_str());
  }

  void clearStartsAgainForAnotherRun() {
    Run first;
    SeriesStore store;
    MeasuredMemoryTracker tracker;
    first.step(1);
    first.memory({1, {{0, 1, 1, 900, 900, 900, 900, 900}, {1, 1, 1, 900, 900, 900, 900, 900}}});
    appendAndCheck(first, store, tracker);
    store.clear();
    tracker.clear();
    QVERIFY(tracker.ranks().empty());
    Run second;
    second.step(1);
    second.memory({1, {{0, 1, 1, 1, 2, 3, 4, 5}}});
    appendAndCheck(second, store, tracker);
    QCOMPARE(tracker.ranks().size(), std::size_t{1});
    QCOMPARE(tracker.ranks()[0].peakSum, std::int64_t{15});
  }
};

}  // namespace fs::app

QTEST_MAIN(fs::app::MeasuredMemoryTrackerTest)
#include "measured_memory_tracker_test.moc"

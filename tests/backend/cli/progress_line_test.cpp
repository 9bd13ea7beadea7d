// ProgressLine with a fake clock: the text (figures, rate, ETA), throttling,
// unknown totals, byte units, clearing, and silence when not on a terminal.
#include "backend/cli/progress_line.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace fs::cli {
namespace {

struct FakeClock {
  double now = 100.0;
  ProgressLine::Clock fn() {
    return [this] { return now; };
  }
};

// The visible text of the last draw: after the last '\r', before the erase-to-end escape.
std::string lastLine(const std::string& s) {
  const auto start = s.rfind('\r');
  if (start == std::string::npos) return "";
  const auto end = s.find("\x1b[K", start);
  return s.substr(start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
}

TEST(ProgressLine, ShowsDoneTotalRateAndEta) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "validate", ProgressLine::Unit::kItems, "shards", clock.fn());
  line.setTotal(40);
  clock.now += 4.0;
  line.update(10, "1200 samples");
  // 10 shards in 4 s: 2.5 shards/s; 30 left: 12 s.
  EXPECT_EQ(lastLine(err.str()), "validate: 10/40 shards, 1200 samples  2.5 shards/s  ETA 0:12");
  EXPECT_NE(err.str().find("\x1b[K"), std::string::npos);
}

TEST(ProgressLine, BytesShowAsMegabytes) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "verify", ProgressLine::Unit::kBytes, "", clock.fn());
  line.setTotal(300'000'000);
  clock.now += 2.0;
  line.update(100'000'000);
  EXPECT_EQ(lastLine(err.str()), "verify: 100.0/300.0 MB  50.0 MB/s  ETA 0:04");
}

TEST(ProgressLine, LongEtaHasHours) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "convert-mmc4", ProgressLine::Unit::kItems, "files", clock.fn());
  line.setTotal(7201);
  clock.now += 1.0;
  line.update(1);
  EXPECT_EQ(lastLine(err.str()), "convert-mmc4: 1/7201 files  1.0 files/s  ETA 2:00:00");
}

TEST(ProgressLine, UnknownTotalHasRateButNoEta) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "inspect", ProgressLine::Unit::kItems, "samples", clock.fn());
  clock.now += 2.0;
  line.update(500);
  EXPECT_EQ(lastLine(err.str()), "inspect: 500 samples  250 samples/s");
}

TEST(ProgressLine, NothingDoneYetHasNoRate) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "validate", ProgressLine::Unit::kItems, "shards", clock.fn());
  line.setTotal(3);
  line.update(0);
  EXPECT_EQ(lastLine(err.str()), "validate: 0/3 shards");
}

TEST(ProgressLine, DrawsAtMostTenTimesASecond) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "x", ProgressLine::Unit::kItems, "items", clock.fn());
  line.update(1);  // the first update always draws
  for (int i = 2; i <= 50; ++i) {
    clock.now += 0.01;  // 49 updates within 0.49 s
    line.update(i);
  }
  std::string s = err.str();
  const auto draws = std::count(s.begin(), s.end(), '\r');
  // Draws at 0, 0.10, 0.20, 0.30, 0.40 s (each 10 ticks apart; float sums may shift one tick).
  EXPECT_GE(draws, 4);
  EXPECT_LE(draws, 5);
  clock.now += 0.05;
  const auto before = err.str().size();
  line.update(51);
  clock.now += 0.2;
  line.update(52);
  EXPECT_EQ(lastLine(err.str()).rfind("x: 52 items", 0), 0u) << err.str().substr(before);
}

TEST(ProgressLine, FinishErasesTheLineOnce) {
  std::ostringstream err;
  FakeClock clock;
  {
    ProgressLine line(err, true, "x", ProgressLine::Unit::kItems, "items", clock.fn());
    line.update(1);
    line.finish();
    const std::string s = err.str();
    ASSERT_GE(s.size(), 4u);
    EXPECT_EQ(s.substr(s.size() - 4), "\r\x1b[K");
    line.finish();  // idempotent; the destructor does nothing more either
    EXPECT_EQ(err.str(), s);
  }
  EXPECT_EQ(err.str().find('\n'), std::string::npos);  // never a newline: the terminal is left as it was
}

TEST(ProgressLine, NeverDrawnNeverErased) {
  std::ostringstream err;
  FakeClock clock;
  { ProgressLine line(err, true, "x", ProgressLine::Unit::kItems, "items", clock.fn()); }
  EXPECT_EQ(err.str(), "");
}

TEST(ProgressLine, ClearErasesAndTheNextUpdateDrawsAgain) {
  std::ostringstream err;
  std::stringstream out;
  FakeClock clock;
  ProgressLine line(err, true, "x", ProgressLine::Unit::kItems, "items", clock.fn());
  line.setResults(out);
  line.update(1);
  line.clear();
  EXPECT_EQ(err.str().substr(err.str().size() - 4), "\r\x1b[K");
  out << "result\n";
  clock.now += 1.0;
  line.update(2);
  EXPECT_EQ(lastLine(err.str()).rfind("x: 2 items", 0), 0u);
}

TEST(ProgressLine, ShowDrawsAPhaseAtOnce) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, "consolidate", ProgressLine::Unit::kItems, "flat parameters", clock.fn());
  line.setTotal(2);
  line.update(1);
  line.show("writing out.pt");  // within the same 100 ms: not throttled
  EXPECT_EQ(lastLine(err.str()), "consolidate: writing out.pt");
  line.finish();
  EXPECT_EQ(err.str().substr(err.str().size() - 4), "\r\x1b[K");
}

TEST(ProgressLine, SilentWhenNotATerminal) {
  std::ostringstream err;
  FakeClock clock;
  {
    ProgressLine line(err, false, "validate", ProgressLine::Unit::kItems, "shards", clock.fn());
    line.setTotal(10);
    for (int i = 0; i <= 10; ++i) {
      clock.now += 1.0;
      line.update(i, "detail");
    }
    line.show("writing");
    line.clear();
    line.finish();
  }
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace fs::cli

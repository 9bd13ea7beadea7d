#include "backend/telemetry/emitter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backend/protocol/config/config_types.h"
#include "tests/backend/protocol/sample_events.h"
#include "tests/backend/telemetry/telemetry_test_util.h"

namespace fs::telemetry {
namespace {

using namespace std::chrono_literals;
using protocol::Event;
using protocol::EventBody;
using protocol::RunDir;
using protocol::StepEvent;
using protocol::WarningEvent;
using testing::decodeAll;
using testing::expectGapFree;
using testing::readAll;
using testing::ScratchDir;
using testing::SinkState;
using testing::TestSink;

StepEvent step(std::int64_t n) {
  StepEvent s;
  s.step = n;
  s.loss = {{"laion", 2.5}};
  s.lr = 1e-4;
  s.step_time_s = 0.5;
  return s;
}

EmitterOptions fixedClock(EmitterOptions o = {}) {
  o.clock = [] { return std::int64_t{1717000000000}; };
  return o;
}

std::unique_ptr<TelemetryEmitter> memoryEmitter(const std::shared_ptr<SinkState>& state,
                                                EmitterOptions o = {}, std::uint64_t first_seq = 0) {
  return std::make_unique<TelemetryEmitter>(std::make_unique<TestSink>(state), first_seq, fixedClock(o));
}

TEST(EmitterTest, WritesDecodableGapFreeLines) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  std::vector<EventBody> bodies = protocol::testing::fullSampleBodies();
  for (auto& b : protocol::testing::minimalSampleBodies()) bodies.push_back(b);
  {
    auto emitter = TelemetryEmitter::open(run, fixedClock());
    ASSERT_TRUE(emitter.isOk()) << emitter.status().message();
    EXPECT_EQ(emitter.value()->firstSeq(), 0u);
    for (const auto& b : bodies) EXPECT_TRUE(emitter.value()->emit(b));
    ASSERT_TRUE(emitter.value()->close().isOk());
    EmitterStats s = emitter.value()->stats();
    EXPECT_EQ(s.emitted, bodies.size());
    EXPECT_EQ(s.written, bodies.size());
    EXPECT_EQ(s.dropped, 0u);
    EXPECT_EQ(s.next_seq, bodies.size());
    EXPECT_GE(s.syncs, 1u);
  }
  std::vector<Event> events = decodeAll(readAll(run.eventsFile()));
  ASSERT_EQ(events.size(), bodies.size());
  expectGapFree(events);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_EQ(events[i].body, bodies[i]) << "event " << i;
    EXPECT_EQ(events[i].t, 1717000000000);
  }
}

// NOTE [Training never waits for telemetry], tested: the writer is stuck inside an
// append (a hung disk) while the training thread keeps emitting.
TEST(EmitterTest, EmitNeverBlocksAndDropsAreCountedAndReported) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.queue_capacity = 8;
  auto emitter = memoryEmitter(state, o);
  state->setHold(true);
  ASSERT_TRUE(emitter->emit(step(0)));
  ASSERT_TRUE(state->waitEntered(1));  // the writer took step 0 and is now stuck

  auto started = std::chrono::steady_clock::now();
  int queued = 0, dropped = 0;
  for (int i = 1; i <= 8 + 5; ++i) (emitter->emit(step(i)) ? queued : dropped)++;
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(queued, 8);
  EXPECT_EQ(dropped, 5);
  EXPECT_LT(took, 1s) << "emit() waited for the writer";
  EXPECT_EQ(emitter->stats().dropped, 5u);

  state->setHold(false);
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  // step 0, the 8 queued steps, then the warning: the drops came after those 8.
  ASSERT_EQ(events.size(), 10u);
  expectGapFree(events);
  for (int i = 0; i <= 8; ++i) EXPECT_EQ(std::get<StepEvent>(events[i].body).step, i);
  const auto& warning = std::get<WarningEvent>(events[9].body);
  EXPECT_EQ(warning.code, "telemetry_dropped");
  EXPECT_EQ(warning.message, "telemetry queue full: dropped 5 events");
}

TEST(EmitterTest, DropsAcrossSeveralBatchesAreReportedEachTime) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.queue_capacity = 2;
  auto emitter = memoryEmitter(state, o);
  int entered = 0;
  for (int round = 0; round < 3; ++round) {
    state->setHold(true);
    ASSERT_TRUE(emitter->emit(step(100 * round)));
    ASSERT_TRUE(state->waitEntered(++entered));
    for (int i = 1; i <= 2 + round + 1; ++i) emitter->emit(step(100 * round + i));  // round+1 dropped
    state->setHold(false);
    ASSERT_TRUE(emitter->flush().isOk());
    std::lock_guard<std::mutex> lock(state->mu);
    entered = state->appends_entered;
  }
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  expectGapFree(events);
  std::vector<std::string> warnings;
  for (const auto& e : events)
    if (auto* w = std::get_if<WarningEvent>(&e.body)) warnings.push_back(w->message);
  EXPECT_EQ(warnings, (std::vector<std::string>{"telemetry queue full: dropped 1 events",
                                                "telemetry queue full: dropped 2 events",
                                                "telemetry queue full: dropped 3 events"}));
  EXPECT_EQ(emitter->stats().dropped, 6u);
}

TEST(EmitterTest, ResumesAfterATornLastLine) {
  ScratchDir dir;
  RunDir run(dir.path());
  ASSERT_TRUE(run.create().isOk());
  {
    auto emitter = TelemetryEmitter::open(run, fixedClock());
    ASSERT_TRUE(emitter.isOk());
    for (int i = 0; i < 3; ++i) emitter.value()->emit(step(i));
  }  // the destructor drains and closes
  testing::appendRaw(run.eventsFile(),
                     "{\"v\":\"1.0\",\"seq\":3,\"t\":1717000000000,\"type\":\"st");  // crash
  {
    auto emitter = TelemetryEmitter::open(run, fixedClock());
    ASSERT_TRUE(emitter.isOk()) << emitter.status().message();
    EXPECT_EQ(emitter.value()->firstSeq(), 3u);
    for (int i = 3; i < 6; ++i) emitter.value()->emit(step(i));
    ASSERT_TRUE(emitter.value()->close().isOk());
  }
  std::vector<Event> events = decodeAll(readAll(run.eventsFile()));
  ASSERT_EQ(events.size(), 6u);
  expectGapFree(events);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(std::get<StepEvent>(events[i].body).step, i);
}

TEST(EmitterTest, FlushAndCloseDrainTheQueue) {
  auto state = std::make_shared<SinkState>();
  auto emitter = memoryEmitter(state);
  for (int i = 0; i < 1000; ++i) emitter->emit(step(i));
  ASSERT_TRUE(emitter->flush().isOk());
  EXPECT_EQ(decodeAll(state->contents()).size(), 1000u);
  EXPECT_GE(state->syncs, 1);
  for (int i = 1000; i < 2000; ++i) emitter->emit(step(i));
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  ASSERT_EQ(events.size(), 2000u);
  expectGapFree(events);
  EXPECT_TRUE(emitter->close().isOk());  // idempotent
  EXPECT_FALSE(emitter->emit(step(9999)));
  EXPECT_EQ(emitter->stats().dropped, 1u);
}

TEST(EmitterTest, FlushTimesOutOnAHungSink) {
  auto state = std::make_shared<SinkState>();
  auto emitter = memoryEmitter(state);
  state->setHold(true);
  emitter->emit(step(1));
  Status s = emitter->flush(50ms);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.message();
  state->setHold(false);
  EXPECT_TRUE(emitter->flush().isOk());
}

TEST(EmitterTest, ConcurrentEmittersKeepOrderPerThreadAndSeqsGapFree) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.queue_capacity = 1 << 16;
  auto emitter = memoryEmitter(state, o);
  constexpr int kThreads = 4, kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) EXPECT_TRUE(emitter->emit(step(t * 1000000 + i)));
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  ASSERT_EQ(events.size(), std::size_t{kThreads * kEach});
  expectGapFree(events);
  std::vector<std::int64_t> last(kThreads, -1);
  for (const auto& e : events) {
    std::int64_t n = std::get<StepEvent>(e.body).step;
    int t = static_cast<int>(n / 1000000);
    EXPECT_GT(n % 1000000, last[t]) << "thread " << t << " out of order";
    last[t] = n % 1000000;
  }
}

TEST(EmitterTest, FailedAppendIsRolledBackAndReported) {
  auto state = std::make_shared<SinkState>();
  auto emitter = memoryEmitter(state);
  state->setHold(true);
  emitter->emit(step(0));
  ASSERT_TRUE(state->waitEntered(1));
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->fail_appends = 1;  // the append holding step 0 fails
  }
  emitter->emit(step(1));
  emitter->emit(step(2));
  state->setHold(false);
  Status flushed = emitter->flush();
  EXPECT_FALSE(flushed.isOk());
  EXPECT_NE(flushed.message().find("no space left"), std::string::npos) << flushed.message();
  ASSERT_TRUE(emitter->close().isOk());  // the error was reported to the flush
  std::vector<Event> events = decodeAll(state->contents());
  ASSERT_EQ(events.size(), 3u);
  expectGapFree(events);  // step 0's seq was given out again
  const auto& warning = std::get<WarningEvent>(events[0].body);
  EXPECT_EQ(warning.code, "telemetry_write_failed");
  EXPECT_EQ(warning.message, "telemetry write failed (test sink: no space left on device): lost 1 events");
  EXPECT_EQ(std::get<StepEvent>(events[1].body).step, 1);
  EXPECT_EQ(std::get<StepEvent>(events[2].body).step, 2);
  EXPECT_EQ(emitter->stats().lost, 1u);
}

// NOTE [A write failure that lasts]: with no grace, a failing sink is reported once one
// more writer round fails too; once an append succeeds again, nothing is reported.
TEST(EmitterTest, AFailureThatLastsIsReportedUntilAnAppendSucceeds) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.failure_grace = 0ms;
  auto emitter = memoryEmitter(state, o);
  EXPECT_TRUE(emitter->writeFailure().isOk()) << "nothing failed yet";
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->fail_appends = 1000000;  // every append fails: a disk that stays full
  }
  emitter->emit(step(0));
  EXPECT_FALSE(emitter->flush().isOk());
  Status failed = emitter->writeFailure();
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.code(), Status::Code::kIOError);
  EXPECT_NE(failed.message().find("test sink: no space left on device (no event written for "),
            std::string::npos)
      << failed.message();
  EXPECT_NE(failed.message().find(", 1 events lost)"), std::string::npos) << failed.message();
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->fail_appends = 0;  // space was freed
  }
  // The failure was recorded before; the round writeFailure() waits for appends the lost-events warning.
  EXPECT_TRUE(emitter->writeFailure().isOk());
  emitter->emit(step(1));
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  ASSERT_EQ(events.size(), 2u);
  expectGapFree(events);
  EXPECT_EQ(std::get<WarningEvent>(events[0].body).code, "telemetry_write_failed");
  EXPECT_EQ(std::get<StepEvent>(events[1].body).step, 1);
}

// Within the grace a failing sink only costs events (the default keeps the run going for 10 s).
TEST(EmitterTest, AFailureWithinTheGraceIsNotReported) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.failure_grace = std::chrono::hours(1);
  auto emitter = memoryEmitter(state, o);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->fail_appends = 1000000;
  }
  emitter->emit(step(0));
  EXPECT_FALSE(emitter->flush().isOk());
  EXPECT_EQ(emitter->stats().lost, 1u);
  EXPECT_TRUE(emitter->writeFailure().isOk());
  EXPECT_EQ(EmitterOptions{}.failure_grace, 10s);
}

TEST(EmitterTest, HeartbeatsCarryTheLatestProgress) {
  auto state = std::make_shared<SinkState>();
  EmitterOptions o;
  o.heartbeat_s = 0.02;
  auto emitter = memoryEmitter(state, o);
  emitter->setProgress(42, protocol::RunState::kPaused);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (emitter->stats().written < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(emitter->close().isOk());
  std::vector<Event> events = decodeAll(state->contents());
  ASSERT_GE(events.size(), 2u);
  expectGapFree(events);
  const auto& hb = std::get<protocol::HeartbeatEvent>(events.back().body);
  EXPECT_EQ(hb.step, 42);
  EXPECT_EQ(hb.state, protocol::RunState::kPaused);
}

TEST(EmitterTest, UrgentEventsAreSyncedWithoutAFlush) {
  auto state = std::make_shared<SinkState>();
  auto emitter = memoryEmitter(state);
  emitter->emit(protocol::RunFinishedEvent{protocol::FinishStatus::kOk, 10, {}, 1.5});
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (emitter->stats().syncs < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(emitter->stats().syncs, 1u);
}

TEST(EmitterTest, OptionsFromConfig) {
  protocol::TelemetryConfig config;
  config.queue_capacity = 123;
  config.heartbeat_s = 2.5;
  EmitterOptions o = EmitterOptions::fromConfig(config);
  EXPECT_EQ(o.queue_capacity, 123u);
  EXPECT_EQ(o.heartbeat_s, 2.5);
}

}  // namespace
}  // namespace fs::telemetry

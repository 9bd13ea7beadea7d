// The loss-spike guard (NOTE [Loss-spike guard] in backend/trainer/loss_spike_guard.h):
//  - the rules (mad, ema) on given windows; FS_FAULT_SPIKE and FS_SKIP_BATCHES parsed, a bad value named;
//  - on real flamingo-train processes, one process and 2 ranks under FSDP full_shard (Gloo, CPU):
//    a planted bad batch (FS_FAULT_SPIKE) makes a spike and the run rolls back, with the rollback
//    event's fields; from there its step losses and its final checkpoint equal bit for bit those of
//    a run that skips the same batches from the start (FS_SKIP_BATCHES); guard off, the run trains
//    through the spike; one spike more than guard.max_rollbacks fails naming the limit; lr_factor
//    scales the step events' lr for exactly lr_factor_steps steps; keep_last 1 still keeps the
//    checkpoint the rollback needs.
#include "backend/trainer/loss_spike_guard.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/trainer/fault_injection.h"
#include "tests/backend/trainer/rank_runs.h"

namespace fs::trainer {
namespace {

using test::RunOutput;
using Env = std::map<int, std::map<std::string, std::string>>;

protocol::GuardConfig guardConfig(const std::string& rule, double threshold) {
  protocol::GuardConfig g = protocol::defaultRunConfig().guard;
  g.enabled = true;
  g.window = 4;
  g.rule = rule;
  g.threshold = threshold;
  return g;
}

TEST(LossSpikeRule, MadCallsAJumpOfManyMadsASpikeAndADropNone) {
  const auto g = guardConfig("mad", 6);
  const std::vector<double> w = {10.0, 9.8, 9.6, 9.4};  // median 9.7, MAD 0.2
  const auto spike = spikeReason(g, "laion", w, 12.0);
  ASSERT_TRUE(spike.has_value());
  EXPECT_NE(spike->find("laion loss 12"), std::string::npos) << *spike;
  EXPECT_NE(spike->find("MADs above the median 9.7"), std::string::npos) << *spike;
  EXPECT_FALSE(spikeReason(g, "laion", w, 9.2).has_value());
  EXPECT_FALSE(spikeReason(g, "laion", w, 9.7 + 5.9 * 1.4826 * 0.2).has_value());
  EXPECT_TRUE(spikeReason(g, "laion", w, 9.7 + 6.1 * 1.4826 * 0.2).has_value());
  EXPECT_FALSE(spikeReason(g, "laion", w, std::nan("")).has_value());  // the NaN skip's
}

TEST(LossSpikeRule, EmaComparesTheRatioToTheWindowsEma) {
  auto g = guardConfig("ema", 2);
  g.ema_beta = 0.5;
  const std::vector<double> w = {4, 2, 2, 2};  // EMA 4 -> 3 -> 2.5 -> 2.25
  EXPECT_FALSE(spikeReason(g, "mmc4", w, 4.4).has_value());
  const auto spike = spikeReason(g, "mmc4", w, 4.6);
  ASSERT_TRUE(spike.has_value());
  EXPECT_NE(spike->find("x its EMA 2.25"), std::string::npos) << *spike;
}

TEST(LossSpikeRule, TheGuardWaitsForAFullWindowAndRewindsItsHistory) {
  LossSpikeGuard guard(guardConfig("mad", 6), 2);
  const double first[] = {1.01, 1.02, 1.03};
  for (int s = 1; s <= 3; ++s) EXPECT_FALSE(guard.observe(s, {{"a", first[s - 1]}}));
  EXPECT_FALSE(guard.observe(4, {{"a", 50.0}}));  // 3 steps on record: no verdict yet
  // The window is now 2..4 plus 5: 50 is in it, so the median stays low and MAD large.
  EXPECT_FALSE(guard.observe(5, {{"a", 1.05}}));
  guard.rewindTo(3);
  EXPECT_EQ(guard.rollbacks(), 1);
  EXPECT_FALSE(guard.observe(4, {{"a", 1.04}}));  // 1..4 on record again, without the 50
  const auto v = guard.observe(5, {{"a", 9.0}});
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "a");
  EXPECT_EQ(v->losses, (std::vector<double>{1.01, 1.02, 1.03, 1.04, 9.0}));
}

TEST(LossSpikeFaults, SpikesAndSkipsParseAndAMalformedValueIsNamed) {
  auto plan = faultPlanFromEnvironment({{"FS_FAULT_SPIKE", "0:9:20,1:13:2.5"}, {"FS_SKIP_BATCHES", "4:7"}});
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_EQ(plan->spikeAt(0, 9), 20.0);
  EXPECT_EQ(plan->spikeAt(1, 13), 2.5);
  EXPECT_EQ(plan->spikeAt(0, 13), 1.0);
  EXPECT_EQ(plan->skipIteration, 4);
  EXPECT_EQ(plan->skipCount, 7);
  for (const char* bad : {"0:9", "0:9:0", "0:9:x", "0:9:20,", "a:9:2"}) {
    auto p = faultPlanFromEnvironment({{"FS_FAULT_SPIKE", bad}});
    ASSERT_FALSE(p.isOk()) << bad;
    EXPECT_NE(p.status().message().find(std::string("FS_FAULT_SPIKE='") + bad + "'"), std::string::npos)
        << p.status().message();
  }
  auto skip = faultPlanFromEnvironment({{"FS_SKIP_BATCHES", "4"}});
  ASSERT_FALSE(skip.isOk());
  EXPECT_NE(skip.status().message().find("FS_SKIP_BATCHES='4': expected <iteration>:<count>"),
            std::string::npos);
}

// 16 iterations of one step each; step checkpoints every 2 steps, keep_last 1; the guard's window 4,
// rule ema with a ratio of 3 (the tiny model's loss never triples by itself; a window of 4 is too
// short for a robust MAD, whose rule the first tests hold).
// The spike is planted in iteration 9 (step 10): the rollback goes to the checkpoint of step 4
// (the newest at or before 10 - 4 - 1) and skips iterations 4..9 plus skip_batches 1: 7 batches.
constexpr int kSpikeIteration = 9, kSpikeStep = 10, kToStep = 4, kSkipped = 7;

class LossSpikeGuardRunTest : public test::RankRunTest, public ::testing::WithParamInterface<int> {
 protected:
  std::string prefix() const override { return "fs-guard"; }
  int world() const { return GetParam(); }

  protocol::RunConfig config(std::vector<std::string> extra = {}) {
    auto sets = test::rankRunSets(world(), 4, 4, 16);
    sets.insert(sets.end(), {"checkpoint.every_steps=2", "checkpoint.keep_last=1", "guard.window=4",
                             "guard.skip_batches=1", "guard.rule=ema", "guard.threshold=3"});
    if (world() > 1) {
      sets.insert(sets.end(), {"launch.nproc_per_node=" + std::to_string(world()), "parallel.mode=fsdp",
                               "parallel.sharding_strategy=full_shard"});
    }
    sets.insert(sets.end(), extra.begin(), extra.end());
    return test::tinyConfig(sets);
  }
  // Rank 0's first dataset (laion) at iteration `iteration`, x 20.
  static Env spikes(const std::string& value) { return {{0, {{"FS_FAULT_SPIKE", value}}}}; }
  RunOutput guarded(const std::string& name, std::vector<std::string> extra = {}, bool expectOk = true,
                    const std::string& spike = "0:" + std::to_string(kSpikeIteration) + ":20") {
    extra.insert(extra.begin(), "guard.enabled=true");
    return run(name, world(), config(extra), spikes(spike), expectOk);
  }
  // The comparator: no spike, the same batches skipped from the start (at the checkpoint's iteration).
  RunOutput skipping(const std::string& name) {
    Env env;
    for (int r = 0; r < world(); ++r)
      env[r] = {{"FS_SKIP_BATCHES", std::to_string(kToStep) + ":" + std::to_string(kSkipped)}};
    return run(name, world(), config(), env);
  }
};

std::vector<protocol::RollbackEvent> rollbacks(const RunOutput& r) {
  std::vector<protocol::RollbackEvent> out;
  for (const auto& e : r.events) {
    if (const auto* b = std::get_if<protocol::RollbackEvent>(&e.body)) out.push_back(*b);
  }
  return out;
}

// The step events after the last rollback event (all of them when there is none).
std::vector<protocol::StepEvent> stepsAfterRollback(const RunOutput& r) {
  std::vector<protocol::StepEvent> out;
  for (const auto& e : r.events) {
    if (std::holds_alternative<protocol::RollbackEvent>(e.body)) out.clear();
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out.push_back(*s);
  }
  return out;
}

TEST_P(LossSpikeGuardRunTest, APlantedSpikeRollsBackAndThenEqualsTheRunThatSkippedItsBatches) {
  const RunOutput g = guarded("guarded");
  const RunOutput c = skipping("comparator");
  const auto rb = rollbacks(g);
  ASSERT_EQ(rb.size(), 1u) << test::errorMessages(g.events);
  const protocol::RollbackEvent& e = rb[0];
  EXPECT_EQ(e.step, kSpikeStep);
  EXPECT_EQ(e.to_step, kToStep);
  EXPECT_EQ(e.checkpoint, "checkpoint_step" + std::to_string(kToStep) + ".pt");
  EXPECT_EQ(e.dataset, "laion");
  EXPECT_EQ(e.rule, "ema");
  EXPECT_NE(e.reason.find("laion loss"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("x its EMA"), std::string::npos) << e.reason;
  ASSERT_EQ(e.losses.size(), 5u);
  EXPECT_GT(e.losses.back(), 3 * e.losses.front());
  EXPECT_EQ(e.batches_skipped, kSkipped);
  EXPECT_EQ(e.lr_factor, 1.0);
  EXPECT_EQ(e.lr_factor_steps, 0);
  EXPECT_EQ(e.rollbacks, 1);
  EXPECT_EQ(e.max_rollbacks, 3);
  // The window's losses are the step events' of steps 6..10.
  std::map<int64_t, double> laion;
  for (const auto& ev : g.events) {
    if (std::holds_alternative<protocol::RollbackEvent>(ev.body)) break;
    if (const auto* s = std::get_if<protocol::StepEvent>(&ev.body)) laion[s->step] = s->loss.at("laion");
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(e.losses[i], laion.at(kSpikeStep - 4 + i)) << i;

  // From the rollback on: the comparator's steps after the checkpoint, bit for bit.
  const auto after = stepsAfterRollback(g);
  std::vector<protocol::StepEvent> expected;
  for (const auto& s : test::stepEvents(c.dir)) {
    if (s.step > kToStep) expected.push_back(s);
  }
  ASSERT_EQ(after.size(), expected.size());
  ASSERT_FALSE(after.empty());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].step, expected[i].step) << i;
    EXPECT_EQ(after[i].loss, expected[i].loss) << "step " << after[i].step;
    EXPECT_EQ(after[i].lr, expected[i].lr) << "step " << after[i].step;
  }
  ASSERT_FALSE(g.state.empty());
  ASSERT_EQ(g.state.size(), c.state.size());
  for (const auto& [name, t] : g.state) {
    ASSERT_TRUE(c.state.count(name)) << name;
    EXPECT_TRUE(torch::equal(t, c.state.at(name))) << name;
  }
  // keep_last 1 would have pruned step 4's checkpoint before the spike; the guard kept it, and said so.
  bool warned = false;
  for (const auto& ev : g.events) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&ev.body);
        w && w->code == "guard_keeps_checkpoints") {
      warned = true;
      EXPECT_NE(w->message.find("checkpoint_step2.pt"), std::string::npos) << w->message;
      EXPECT_NE(w->message.find("keep_last is 1"), std::string::npos) << w->message;
    }
  }
  EXPECT_TRUE(warned);
  EXPECT_TRUE(std::filesystem::exists(g.dir / "checkpoint_step4.pt"));
  EXPECT_FALSE(std::filesystem::exists(g.dir / "checkpoint_step2.pt"));
}

TEST_P(LossSpikeGuardRunTest, WithTheGuardOffTheRunTrainsThroughTheSpike) {
  const RunOutput r = run("off", world(), config(), spikes("0:" + std::to_string(kSpikeIteration) + ":20"));
  EXPECT_TRUE(rollbacks(r).empty());
  std::map<int64_t, double> laion;
  for (const auto& s : test::stepEvents(r.dir)) laion[s.step] = s.loss.at("laion");
  ASSERT_EQ(laion.size(), 16u);
  EXPECT_GT(laion.at(kSpikeStep), 3 * laion.at(kSpikeStep - 1));
}

TEST_P(LossSpikeGuardRunTest, OneSpikeMoreThanMaxRollbacksStopsTheRunNamingTheLimit) {
  // The second spike: iteration 13, the third step after the rollback (iterations 11, 12, 13).
  const RunOutput r = guarded("limit", {"guard.max_rollbacks=1"}, /*expectOk=*/false,
                              "0:" + std::to_string(kSpikeIteration) + ":20,0:13:20");
  EXPECT_EQ(rollbacks(r).size(), 1u);
  for (const auto& exit : r.exits) EXPECT_NE(exit.code, 0);
  const std::string errors = test::errorMessages(r.events);
  EXPECT_NE(errors.find("guard.max_rollbacks is 1"), std::string::npos) << errors;
  EXPECT_NE(r.exits[0].output.find("guard.max_rollbacks is 1"), std::string::npos) << r.exits[0].output;
}

TEST_P(LossSpikeGuardRunTest, TheLrFactorScalesTheLrForExactlyItsSteps) {
  const RunOutput g = guarded("factor", {"guard.lr_factor=0.5", "guard.lr_factor_steps=2",
                                         "optim.warmup_steps=0", "optim.scheduler=constant"});
  const auto rb = rollbacks(g);
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_EQ(rb[0].lr_factor, 0.5);
  EXPECT_EQ(rb[0].lr_factor_steps, 2);
  const auto after = stepsAfterRollback(g);
  ASSERT_GE(after.size(), 3u);
  const double lr = test::stepEvents(g.dir).front().lr;
  EXPECT_EQ(after[0].lr, 0.5 * lr);
  EXPECT_EQ(after[1].lr, 0.5 * lr);
  for (size_t i = 2; i < after.size(); ++i) EXPECT_EQ(after[i].lr, lr) << after[i].step;
  // The console line.
  EXPECT_NE(g.exits[0].output.find("loss-spike guard: rollback 1/3"), std::string::npos) << g.exits[0].output;
}

INSTANTIATE_TEST_SUITE_P(OneProcessAndFsdp, LossSpikeGuardRunTest, ::testing::Values(1, 2),
                         [](const auto& info) { return info.param == 1 ? "one_process" : "fsdp_2_ranks"; });

}  // namespace
}  // namespace fs::trainer

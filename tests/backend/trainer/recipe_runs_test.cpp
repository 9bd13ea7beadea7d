// Recipes a real run needs (issue 44 item 4), on real flamingo-train processes:
//  - one dataset (LAION only) and three (laion, mmc4 and a second image-text
//    set, cc3m) on the generated source, each with shards of its own: the
//    step events carry exactly the configured datasets' losses, run_started
//    lists them, the loss falls, and a restart from a step checkpoint gives
//    the uninterrupted run's losses, state and data positions bit for bit;
//  - the gates of the step events are tanh of the model's gate parameters at
//    that step (read back from the step's checkpoint with the engine's
//    reader), in one process and on 2 FSDP ranks (full_shard: read from the
//    shards); after training steps they are non-zero and move every step.
// shard_grad_op's save and restart is with the other strategies' in fsdp_test.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <numeric>
#include <set>

#include "backend/checkpoint/checkpoint_io.h"
#include "tests/backend/checkpoint/checkpoint_compare.h"
#include "tests/backend/trainer/rank_runs.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;
using test::RunOutput;

// The tiny preset as shipped (data.source generated), one epoch of 16 steps at a learning rate that
// shows the loss falling, a step checkpoint every 8, one thread, a step event per step.
protocol::RunConfig generatedTiny(const std::vector<std::string>& extra) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  EXPECT_EQ(load.config.data.source, "generated");
  std::vector<std::string> sets = {
      "optim.epochs=1",           "optim.lr=0.01",          "launch.threads_per_rank=1",
      "checkpoint.every_steps=8", "checkpoint.keep_last=5", "telemetry.interval_steps=1"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  auto problems = protocol::applyOverrides(&load.config, sets);
  EXPECT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  return load.config;
}

std::vector<std::string> datasetNames(const protocol::RunConfig& c) {
  std::vector<std::string> names;
  for (const auto& d : c.data.datasets) names.push_back(d.name);
  return names;
}

template <class Map>
std::set<std::string> keysOf(const Map& m) {
  std::set<std::string> keys;
  for (const auto& [k, v] : m) keys.insert(k);
  return keys;
}

// The data position of a checkpoint, its shard paths relative to the run's generated data (each run
// writes its own copy, so only the place within it can be compared).
protocol::DataPositionRecord positionIn(const fsys::path& runDir, const std::string& file) {
  auto ck = checkpoint::readCheckpoint(runDir / file);
  EXPECT_TRUE(ck.isOk()) << ck.status().message();
  if (!ck.isOk()) return {};
  protocol::DataPositionRecord p = ck->resume.data;
  for (auto& c : p.cursors) c.shard = fsys::relative(c.shard, runDir / "generated-data" / "rank0").string();
  return p;
}

class RecipeRunsTest : public test::RankRunTest {
 protected:
  std::string prefix() const override { return "fs-recipes"; }
  // Trains `cfg` in one process uninterrupted, then again from its step-8 checkpoint alone: the datasets,
  // the falling loss, and the restart equal to the uninterrupted run bit for bit.
  void expectDatasetsTrainAndResume(const protocol::RunConfig& cfg);
};

void RecipeRunsTest::expectDatasetsTrainAndResume(const protocol::RunConfig& cfg) {
  const std::vector<std::string> names = datasetNames(cfg);
  const std::set<std::string> nameSet(names.begin(), names.end());
  const RunOutput whole = run("whole", 1, cfg);
  ASSERT_EQ(whole.losses.size(), 16u) << whole.exits[0].output;
  int started = 0;
  for (const auto& e : whole.events) {
    if (const auto* s = std::get_if<protocol::RunStartedEvent>(&e.body)) {
      ++started;
      EXPECT_EQ(s->datasets, names);
    }
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) {
      EXPECT_EQ(keysOf(s->loss), nameSet) << "step " << s->step;
      EXPECT_EQ(keysOf(s->rank_loss), nameSet) << "step " << s->step;
      EXPECT_EQ(keysOf(s->samples), nameSet) << "step " << s->step;
      for (const auto& d : cfg.data.datasets) {
        EXPECT_EQ(s->samples.at(d.name), s->step * d.batch_size) << "step " << s->step << " " << d.name;
        EXPECT_TRUE(std::isfinite(s->loss.at(d.name))) << "step " << s->step << " " << d.name;
      }
    }
  }
  EXPECT_EQ(started, 1);
  // The loss falls: the last four steps' mean under the first four's, for every dataset.
  for (const auto& name : names) {
    double first = 0, last = 0;
    for (size_t i = 0; i < 4; ++i) {
      first += whole.losses[i].at(name) / 4;
      last += whole.losses[12 + i].at(name) / 4;
    }
    EXPECT_LT(last, first - 0.05) << name << ": the loss did not fall";
  }
  // Every dataset read shards of its own.
  const auto position = positionIn(whole.dir, "checkpoint_step8.pt");
  ASSERT_EQ(position.cursors.size(), names.size());
  std::set<std::string> shardSets;
  for (const auto& c : position.cursors) {
    EXPECT_GT(c.samplesRead, 0) << c.shard;
    shardSets.insert(fsys::path(c.shard).parent_path().string());
  }
  EXPECT_EQ(shardSets.size() + (nameSet.count("mmc4") ? 1 : 0), names.size())
      << "laion and mmc4 share the first directory; every further dataset has one of its own";

  std::filesystem::create_directories(root_ / "restarted");
  std::filesystem::copy_file(whole.dir / "checkpoint_step8.pt", root_ / "restarted" / "checkpoint_step8.pt");
  const RunOutput restarted = run("restarted", 1, cfg);
  ASSERT_EQ(restarted.losses.size(), 8u) << restarted.exits[0].output;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(restarted.losses[i], whole.losses[8 + i]) << "step " << 9 + i;
  auto a = checkpoint::readCheckpoint(whole.dir / "checkpoint_0.pt");
  auto b = checkpoint::readCheckpoint(restarted.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().message() << b.status().message();
  checkpoint::test::expectBitwiseEqual(*a, *b, "restarted vs uninterrupted");
  EXPECT_EQ(positionIn(restarted.dir, "checkpoint_step16.pt"), positionIn(whole.dir, "checkpoint_step16.pt"));
}

TEST_F(RecipeRunsTest, OneDatasetTrainsAndResumesBitForBit) {
  const auto cfg = generatedTiny({"data.datasets=laion"});
  ASSERT_EQ(cfg.data.datasets.size(), 1u);
  expectDatasetsTrainAndResume(cfg);
}

TEST_F(RecipeRunsTest, ThreeDatasetsTrainAndResumeBitForBit) {
  // A second image-text set beside LAION and MMC4: 16 batches of 2 an epoch, as the others give 16.
  const auto cfg =
      generatedTiny({"data.datasets[2].name=cc3m", "data.datasets.cc3m.type=laion",
                     "data.datasets.cc3m.batch_size=2", "data.datasets.cc3m.samples_per_epoch=32",
                     "data.datasets.cc3m.max_tokens=16", "data.datasets.cc3m.loss_multiplier=0.5"});
  ASSERT_EQ(cfg.data.datasets.size(), 3u);
  expectDatasetsTrainAndResume(cfg);
}

// The gate parameters of a checkpoint: decoder layer -> (attn_gate, ff_gate), each a one-element tensor.
std::map<int, std::pair<torch::Tensor, torch::Tensor>> gatesOf(const fsys::path& file) {
  std::map<int, std::pair<torch::Tensor, torch::Tensor>> out;
  auto ck = checkpoint::readCheckpoint(file);
  EXPECT_TRUE(ck.isOk()) << file << ": " << ck.status().message();
  if (!ck.isOk()) return out;
  const std::string block = ".gated_cross_attn_layer.";
  for (const auto& [name, t] : ck->modelState) {
    const auto at = name.find(block);
    if (at == std::string::npos) continue;
    const std::string gate = name.substr(at + block.size());
    if (gate != "attn_gate" && gate != "ff_gate") continue;
    const auto dot = name.rfind('.', at - 1);
    const int layer = std::stoi(name.substr(dot + 1, at - dot - 1));
    (gate == "attn_gate" ? out[layer].first : out[layer].second) = t;
  }
  return out;
}

// Every step event's gates against the step's own checkpoint; non-zero from step 2 (step 1 runs at the
// warmup's lr 0) and different from the step before.
void expectGatesFromTheModel(const RunOutput& r, int steps) {
  std::vector<protocol::StepEvent> events;
  for (const auto& e : r.events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) events.push_back(*s);
  }
  ASSERT_EQ(events.size(), static_cast<size_t>(steps)) << r.exits[0].output;
  std::vector<protocol::GateValue> previous;
  for (const auto& s : events) {
    SCOPED_TRACE("step " + std::to_string(s.step));
    const auto gates = gatesOf(r.dir / ("checkpoint_step" + std::to_string(s.step) + ".pt"));
    ASSERT_EQ(gates.size(), 2u) << "the tiny model's two cross-attention layers";
    ASSERT_EQ(s.gates.size(), gates.size());
    size_t k = 0;
    for (const auto& [layer, g] : gates) {
      const auto& v = s.gates[k++];
      EXPECT_EQ(v.layer, layer);
      EXPECT_EQ(v.attn, g.first.tanh().item<double>()) << "layer " << layer;
      EXPECT_EQ(v.ff, g.second.tanh().item<double>()) << "layer " << layer;
      if (s.step >= 2) {
        EXPECT_NE(v.attn, 0.0) << "layer " << layer;
        EXPECT_NE(v.ff, 0.0) << "layer " << layer;
      }
      if (!previous.empty()) {
        EXPECT_NE(v.attn, previous[k - 1].attn) << "layer " << layer << " did not move";
        EXPECT_NE(v.ff, previous[k - 1].ff) << "layer " << layer << " did not move";
      }
    }
    previous = s.gates;
  }
}

// A checkpoint every step (keep them all) and a step event every step, 6 steps at lr 0.01.
std::vector<std::string> gateSets(int world) {
  auto sets = test::rankRunSets(world, 4, 4, 6);
  sets.insert(sets.end(), {"optim.lr=0.01", "checkpoint.every_steps=1", "checkpoint.keep_last=10"});
  return sets;
}

TEST_F(RecipeRunsTest, GatesInStepEventsAreTheModelsInOneProcess) {
  const RunOutput r = run("single", 1, test::tinyConfig(gateSets(1)));
  expectGatesFromTheModel(r, 6);
}

TEST_F(RecipeRunsTest, GatesInStepEventsAreTheModelsReadFromFsdpShards) {
  auto sets = gateSets(2);
  sets.insert(sets.end(),
              {"launch.nproc_per_node=2", "parallel.mode=fsdp", "parallel.sharding_strategy=full_shard"});
  const RunOutput r = run("fsdp", 2, test::tinyConfig(sets));
  // Sharded: no rank holds a whole gate; the event's values come from the shards (parallelize.h).
  bool sharded = false;
  for (const auto& e : r.events) {
    if (const auto* l = std::get_if<protocol::LayoutEvent>(&e.body)) sharded = l->units.size() > 1;
  }
  EXPECT_TRUE(sharded) << "no FSDP layout event";
  expectGatesFromTheModel(r, 6);
}

}  // namespace
}  // namespace fs::trainer

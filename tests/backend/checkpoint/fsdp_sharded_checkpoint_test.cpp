// Sharded checkpoints (checkpoint.format: sharded; NOTE [Sharded
// checkpoints] in backend/checkpoint/checkpoint_sharded.h) on real
// flamingo-train rank processes on loopback, a few steps of the tiny preset:
//  - each rank file holds exactly its shards (the layout event's bytes) and
//    Debian's Python torch.load reads every one; Python reassembles the
//    parameters from index.json alone;
//  - `checkpoint consolidate` gives the full checkpoint the same run writes
//    with checkpoint.format full, bit for bit (model, optimizer, scheduler);
//  - resuming from it on 3 FSDP ranks and on one process gives the losses
//    resuming from the full checkpoint gives;
//  - hybrid_shard on 2 nodes x 2: only the first node writes, and a restart
//    from the sharded checkpoint is bitwise the uninterrupted run, as under
//    shard_grad_op on 2 ranks (every rank writes); no_shard
//    writes rank 0's file alone;
//  - a directory without index.json or with a rank file missing is skipped
//    by the start-up scan and named; an index that disagrees with a rank
//    file, or of an unknown version, is refused by name.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend/checkpoint/checkpoint_sharded_index.h"
#include "tests/backend/checkpoint/checkpoint_compare.h"
#include "tests/backend/trainer/rank_runs.h"

namespace fs::checkpoint {
namespace {

using trainer::test::RunOutput;
using Env = std::map<int, std::map<std::string, std::string>>;

// stdout of a shell command; fails the test on a non-zero exit.
std::string commandOutput(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr) << cmd;
  if (!p) return "";
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd << "\n" << out;
  return out;
}

class FsdpShardedCheckpointTest : public trainer::test::RankRunTest {
 protected:
  std::string prefix() const override { return "fs-fsdp-sharded"; }

  // Global batches of 6 LAION and 6 MMC4 samples (divisible by 1, 2 and 3 ranks; 8 on 2 nodes x 2),
  // 4 steps, a step checkpoint every 2.
  protocol::RunConfig config(int world, const std::string& format, std::vector<std::string> extra = {},
                             int nodes = 1) {
    const int batch = nodes > 1 ? 8 : 6;
    auto sets = trainer::test::rankRunSets(world, batch, batch, 4);
    sets.insert(sets.end(),
                {"launch.nproc_per_node=" + std::to_string(world / nodes),
                 "launch.nnodes=" + std::to_string(nodes), "parallel.mode=fsdp",
                 "checkpoint.format=" + format, "checkpoint.every_steps=2", "checkpoint.keep_last=5"});
    if (nodes > 1)
      sets.push_back("launch.kind=external");  // the test starts the ranks with torchrun's variables
    sets.insert(sets.end(), extra.begin(), extra.end());
    return trainer::test::tinyConfig(sets);
  }
  static Env nodes(int world, int perNode) {
    Env env;
    for (int r = 0; r < world; ++r) {
      env[r] = {{"LOCAL_RANK", std::to_string(r % perNode)}, {"LOCAL_WORLD_SIZE", std::to_string(perNode)}};
    }
    return env;
  }
  // A run directory holding only `checkpoint` (a file or a sharded directory), copied.
  void seed(const std::string& name, const std::filesystem::path& checkpoint) {
    std::filesystem::create_directories(root_ / name);
    std::filesystem::copy(checkpoint, root_ / name / checkpoint.filename(),
                          std::filesystem::copy_options::recursive);
  }
  std::filesystem::path consolidate(const std::filesystem::path& dir, const std::string& name) {
    const auto out = root_ / name;
    commandOutput(std::string(FS_BINARY_DIR) + "/bin/flamingo-train checkpoint consolidate '" + dir.string() +
                  "' '" + out.string() + "' 2>&1");
    return out;
  }
};

int64_t layoutShardBytes(const RunOutput& r, int rank) {
  for (const auto& e : r.events) {
    if (const auto* l = std::get_if<protocol::LayoutEvent>(&e.body)) {
      int64_t n = 0;
      for (const auto& u : l->units) n += u.shard_bytes.at(static_cast<size_t>(rank));
      return n;
    }
  }
  ADD_FAILURE() << "no layout event";
  return -1;
}

void expectSameLosses(const RunOutput& a, const RunOutput& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  ASSERT_FALSE(a.losses.empty()) << what;
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(a.losses[i], b.losses[i]) << what << " step " << i + 1;
}

TEST_F(FsdpShardedCheckpointTest, RankFilesHoldTheirShardsAndTorchLoadReadsThem) {
  // keep_last 1: the older step directory is pruned once the newer one is complete.
  const RunOutput r = run("sharded", 2, config(2, "sharded", {"checkpoint.keep_last=1"}));
  ASSERT_EQ(r.losses.size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(r.dir / "checkpoint_step2.pt"));
  const auto dir = r.dir / "checkpoint_step4.pt";
  ASSERT_TRUE(std::filesystem::is_directory(dir));
  for (const char* f : {"index.json", "rank-0.pt", "rank-1.pt"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  for (const auto& e : std::filesystem::directory_iterator(r.dir)) {
    EXPECT_NE(e.path().filename().string().rfind(".checkpoint", 0), 0u) << "left behind: " << e.path();
  }
  const auto full = consolidate(dir, "consolidated.pt");
  const auto j =
      nlohmann::json::parse(commandOutput(std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                                          "/tests/backend/checkpoint/check_sharded_checkpoint.py '" +
                                          dir.string() + "' '" + full.string() + "'"));
  ASSERT_EQ(j["files"].size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const auto& f = j["files"][rank];
    EXPECT_EQ(f["shard"], rank);
    EXPECT_EQ(f["shard_bytes"].get<int64_t>(), layoutShardBytes(r, rank)) << "rank " << rank;
    EXPECT_GT(f["optimizer"].get<int>(), 0) << "rank " << rank;
  }
  EXPECT_GT(j["compared"].get<int>(), 10);
  EXPECT_EQ(j["equal"], j["compared"]) << "Python's reassembly from index.json differs from consolidate's";
}

TEST_F(FsdpShardedCheckpointTest, ConsolidatedIsTheFullCheckpointAndResumesAlike) {
  const RunOutput full = run("full", 2, config(2, "full"));
  const RunOutput sharded = run("sharded", 2, config(2, "sharded"));
  expectSameLosses(full, sharded, "full vs sharded format");
  for (const char* name : {"checkpoint_step2.pt", "checkpoint_step4.pt", "checkpoint_0.pt"}) {
    ASSERT_TRUE(std::filesystem::is_directory(sharded.dir / name)) << name;
    auto a = readCheckpoint(full.dir / name);
    auto b = readCheckpoint(consolidate(sharded.dir / name, std::string("consolidated_") + name));
    ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().message() << b.status().message();
    test::expectBitwiseEqual(*a, *b, std::string("consolidated ") + name);
    EXPECT_EQ(a->resume.manifest, b->resume.manifest) << name;
  }
  // Resume from step 2 of either format on other world sizes and modes: the same losses.
  auto resumed = [&](const std::string& name, int world, const protocol::RunConfig& cfg,
                     const RunOutput& from) {
    seed(name, from.dir / "checkpoint_step2.pt");
    RunOutput r = run(name, world, cfg);
    EXPECT_EQ(r.losses.size(), 2u) << name;
    return r;
  };
  const RunOutput fromFull3 = resumed("full_on_3", 3, config(3, "full"), full);
  const RunOutput fromSharded3 = resumed("sharded_on_3", 3, config(3, "sharded"), sharded);
  expectSameLosses(fromFull3, fromSharded3, "resumed on 3 FSDP ranks");
  auto single = config(1, "full");
  single.parallel.mode = "ddp";
  const RunOutput fromFull1 = resumed("full_on_1", 1, single, full);
  // Named by checkpoint.resume_from this time, not found by the scan.
  single.checkpoint.resume_from = (sharded.dir / "checkpoint_step2.pt").string();
  const RunOutput fromSharded1 = run("sharded_on_1", 1, single);
  ASSERT_EQ(fromSharded1.losses.size(), 2u);
  expectSameLosses(fromFull1, fromSharded1, "resumed in one process");
  for (size_t i = 0; i < fromSharded1.losses.size(); ++i) {
    for (const auto& [dataset, l] : full.losses[2 + i]) {
      EXPECT_NEAR(fromSharded1.losses[i].at(dataset), l, 1e-5 * std::abs(l))
          << "step " << 3 + i << " " << dataset;
    }
  }
}

TEST_F(FsdpShardedCheckpointTest, HybridSaveAndRestartIsBitwiseTheUninterruptedRun) {
  const auto cfg = config(4, "sharded", {"parallel.sharding_strategy=hybrid_shard"}, 2);
  const RunOutput whole = run("whole", 4, cfg, nodes(4, 2));
  ASSERT_EQ(whole.losses.size(), 4u);
  const auto step2 = whole.dir / "checkpoint_step2.pt";
  // The second node holds the same shards: only the first node's ranks write.
  EXPECT_TRUE(std::filesystem::exists(step2 / "rank-1.pt"));
  EXPECT_FALSE(std::filesystem::exists(step2 / "rank-2.pt"));
  auto index = readShardedIndex(step2);
  ASSERT_TRUE(index.isOk()) << index.status().message();
  EXPECT_EQ(index->worldSize, 4);
  EXPECT_EQ(index->shardGroupSize, 2);
  EXPECT_EQ(index->strategy, "hybrid_shard");
  seed("restarted", step2);
  const RunOutput restarted = run("restarted", 4, cfg, nodes(4, 2));
  ASSERT_EQ(restarted.losses.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(restarted.losses[i], whole.losses[2 + i]) << "step " << 3 + i;
  auto a = readCheckpoint(whole.dir / "checkpoint_0.pt");
  auto b = readCheckpoint(restarted.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().message() << b.status().message();
  test::expectBitwiseEqual(*a, *b, "restarted vs uninterrupted");
}

// Issue 44 item 4: shard_grad_op shards over every rank as full_shard does, so every rank writes its file;
// the index names the strategy, and a restart from it is the uninterrupted run bit for bit.
TEST_F(FsdpShardedCheckpointTest, ShardGradOpSaveAndRestartIsBitwiseTheUninterruptedRun) {
  const auto cfg = config(2, "sharded", {"parallel.sharding_strategy=shard_grad_op"});
  const RunOutput whole = run("whole", 2, cfg);
  ASSERT_EQ(whole.losses.size(), 4u);
  const auto step2 = whole.dir / "checkpoint_step2.pt";
  for (const char* f : {"index.json", "rank-0.pt", "rank-1.pt"})
    EXPECT_TRUE(std::filesystem::exists(step2 / f)) << f;
  auto index = readShardedIndex(step2);
  ASSERT_TRUE(index.isOk()) << index.status().message();
  EXPECT_EQ(index->strategy, "shard_grad_op");
  EXPECT_EQ(index->shardGroupSize, 2);
  seed("restarted", step2);
  const RunOutput restarted = run("restarted", 2, cfg);
  ASSERT_EQ(restarted.losses.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(restarted.losses[i], whole.losses[2 + i]) << "step " << 3 + i;
  auto a = readCheckpoint(whole.dir / "checkpoint_0.pt");
  auto b = readCheckpoint(restarted.dir / "checkpoint_0.pt");
  ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().message() << b.status().message();
  test::expectBitwiseEqual(*a, *b, "shard_grad_op restarted vs uninterrupted");
}

TEST_F(FsdpShardedCheckpointTest, NoShardWritesOneFileThatReadsAsTheFullCheckpoint) {
  const RunOutput full = run("full", 2, config(2, "full", {"parallel.sharding_strategy=no_shard"}));
  const RunOutput sharded = run("sharded", 2, config(2, "sharded", {"parallel.sharding_strategy=no_shard"}));
  const auto dir = sharded.dir / "checkpoint_step4.pt";
  // Every rank holds everything: rank 0 alone writes.
  EXPECT_TRUE(std::filesystem::exists(dir / "rank-0.pt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-1.pt"));
  auto a = readCheckpoint(full.dir / "checkpoint_step4.pt");
  auto b = readCheckpoint(dir);
  ASSERT_TRUE(a.isOk() && b.isOk()) << a.status().message() << b.status().message();
  test::expectBitwiseEqual(*a, *b, "no_shard sharded vs full");
}

TEST_F(FsdpShardedCheckpointTest, AnIncompleteCheckpointIsSkippedByName) {
  const RunOutput r = run("sharded", 2, config(2, "sharded"));
  ASSERT_EQ(r.losses.size(), 4u);
  const auto dir = root_ / "scan";
  std::filesystem::create_directories(dir);
  for (const char* name : {"checkpoint_step2.pt", "checkpoint_step4.pt", "checkpoint_0.pt"}) {
    std::filesystem::copy(r.dir / name, dir / name, std::filesystem::copy_options::recursive);
  }
  std::filesystem::remove(dir / "checkpoint_0.pt" / "index.json");     // a write cut before its index
  std::filesystem::remove(dir / "checkpoint_step4.pt" / "rank-1.pt");  // a rank file lost
  std::vector<std::string> skipped;
  const auto candidates = checkpointCandidates(dir, &skipped);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates.front().filename(), "checkpoint_step2.pt");
  ASSERT_EQ(skipped.size(), 2u);
  std::string all = skipped[0] + "\n" + skipped[1];
  EXPECT_NE(all.find("checkpoint_0.pt/index.json: missing"), std::string::npos) << all;
  EXPECT_NE(all.find("checkpoint_step4.pt/rank-1.pt: missing"), std::string::npos) << all;
  // Read explicitly (checkpoint.resume_from), the error names the file too.
  auto lost = readCheckpoint(dir / "checkpoint_step4.pt");
  ASSERT_FALSE(lost.isOk());
  EXPECT_NE(lost.status().message().find("rank-1.pt"), std::string::npos) << lost.status().message();
  // An index whose layout disagrees with a rank file: refused, naming the file and the flat parameter.
  const auto indexPath = dir / "checkpoint_step2.pt" / "index.json";
  auto editIndex = [&](const std::function<void(nlohmann::json&)>& edit) {
    std::ifstream in(indexPath);
    auto j = nlohmann::json::parse(in);
    in.close();
    edit(j);
    std::ofstream(indexPath) << j.dump();
  };
  std::string flat;
  editIndex([&](nlohmann::json& j) {
    auto& f = j["units"][0]["flats"][0];
    flat = f["key"].get<std::string>();
    f["shard_numel"] = f["shard_numel"].get<int64_t>() + 1;  // still adds up: two more elements of padding
    f["padding"] = f["padding"].get<int64_t>() + 2;
  });
  auto resized = readCheckpoint(dir / "checkpoint_step2.pt");
  ASSERT_FALSE(resized.isOk());
  EXPECT_NE(resized.status().message().find("rank-0.pt: shard of " + flat + " has"), std::string::npos)
      << resized.status().message();
  // A newer index version is refused by number.
  editIndex([](nlohmann::json& j) { j["version"] = 99; });
  auto newer = readCheckpoint(dir / "checkpoint_step2.pt");
  ASSERT_FALSE(newer.isOk());
  EXPECT_NE(newer.status().message().find("index version 99 is unknown"), std::string::npos)
      << newer.status().message();
  // A run on that directory resumes from nothing it cannot read, and says why in a warning.
  std::filesystem::remove_all(dir / "checkpoint_step2.pt");
  seed("resumed", dir / "checkpoint_0.pt");
  const RunOutput fresh = run("resumed", 2, config(2, "sharded"));
  EXPECT_EQ(fresh.losses.size(), 4u) << "nothing complete to resume from: a fresh start";
  bool warned = false;
  for (const auto& e : fresh.events) {
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      warned =
          warned || (w->code == "checkpoint_skipped" && w->message.find("index.json") != std::string::npos);
    }
  }
  EXPECT_TRUE(warned);
  EXPECT_FALSE(fresh.state.empty()) << "its own checkpoint_0.pt replaced the incomplete one";
}

}  // namespace
}  // namespace fs::checkpoint

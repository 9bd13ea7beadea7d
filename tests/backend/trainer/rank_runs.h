// Runs of real flamingo-train rank processes on loopback (torchrun's
// variables, one process per rank) for the DDP and FSDP tests: start them,
// wait, read the events, the losses and the final checkpoint.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/protocol/config/config_yaml.h"
#include "tests/backend/distributed/rank_processes.h"
#include "tests/backend/trainer/engine_test_util.h"

namespace fs::trainer::test {

using fs::testing::RankExit;

struct RunOutput {
  std::filesystem::path dir;
  std::vector<RankExit> exits;
  std::vector<protocol::Event> events;
  std::vector<std::map<std::string, double>> losses;  // per step event, in order
  std::map<std::string, torch::Tensor> state;         // final checkpoint's model state
};

// Fills `out`'s events, losses and final model state from the finished run
// in `out->dir` (however its ranks were started).
inline void readRunResults(RunOutput* out) {
  out->events = test::readEvents(out->dir, true);
  for (const auto& e : out->events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out->losses.push_back(s->loss);
  }
  auto ck = checkpoint::readCheckpoint(out->dir / "checkpoint_0.pt");
  if (ck) out->state = std::map<std::string, torch::Tensor>(ck->modelState.begin(), ck->modelState.end());
}

class RankRunTest : public ::testing::Test {
 protected:
  virtual std::string prefix() const = 0;  // of the temporary directory, e.g. "fs-ddp"
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            (prefix() + "-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(root_);
  }

  // Starts `world` ranks on `cfg` in run directory `name`; `env[r]` adds to rank r's environment.
  RunOutput run(
      const std::string& name, int world, const protocol::RunConfig& cfg,
      std::map<int, std::map<std::string, std::string>> env = {}, bool expectOk = true,
      const std::function<void(const std::vector<pid_t>&, const std::filesystem::path&)>& during = {}) {
    RunOutput out;
    out.dir = root_ / name;
    const auto cfgPath = root_ / (name + ".yaml");
    EXPECT_TRUE(protocol::saveConfigFile(cfg, cfgPath.string()).isOk());
    const int port = fs::testing::freePort();
    std::vector<pid_t> pids;
    std::vector<std::filesystem::path> logs;
    for (int r = 0; r < world; ++r) {
      std::map<std::string, std::string> e = {{"OMP_NUM_THREADS", "1"}};
      if (world > 1) {
        e = {{"RANK", std::to_string(r)},       {"WORLD_SIZE", std::to_string(world)},
             {"LOCAL_RANK", std::to_string(r)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
             {"MASTER_ADDR", "127.0.0.1"},      {"MASTER_PORT", std::to_string(port)},
             {"OMP_NUM_THREADS", "1"}};
      }
      for (const auto& [k, v] : env[r]) e[k] = v;
      logs.push_back(root_ / (name + ".rank" + std::to_string(r) + ".out"));
      pids.push_back(fs::testing::spawnWithEnv({std::string(FS_BINARY_DIR) + "/bin/flamingo-train", "train",
                                                "--config", cfgPath.string(), "--run-dir", out.dir.string()},
                                               e, logs.back()));
    }
    if (during) during(pids, out.dir);
    out.exits = fs::testing::waitAll(pids, logs, std::chrono::seconds(400));
    if (expectOk) {
      for (int r = 0; r < world; ++r) {
        EXPECT_EQ(out.exits[r].code, 0) << name << " rank " << r << ":\n" << out.exits[r].output;
      }
    }
    readRunResults(&out);
    return out;
  }

  std::filesystem::path root_;
};

// The overrides every rank-run test shares: a LLaMA-shaped LM (OPT's dropout
// would make ranks differ from one process by design), one epoch, no
// accumulation, one thread per rank, a step event per step, no periodic
// checkpoint, short collective timeouts; then global batches of `laion` and
// `mmc4` samples split over `world` ranks, `steps` iterations.
inline std::vector<std::string> rankRunSets(int world, int laion, int mmc4, int steps) {
  return {"model.lm.family=llama",
          "optim.epochs=1",
          "optim.grad_accum_steps=1",
          "data.datasets[0].batch_size=" + std::to_string(laion / world),
          "data.datasets[0].samples_per_epoch=" + std::to_string(laion * steps),
          "data.datasets[1].batch_size=" + std::to_string(mmc4 / world),
          "data.datasets[1].samples_per_epoch=" + std::to_string(mmc4 * steps),
          "launch.threads_per_rank=1",
          "checkpoint.every_steps=0",
          "telemetry.interval_steps=1",
          "parallel.collective_timeout_s=60",
          "parallel.preflight_timeout_s=60"};
}

// The same losses at every step (within `rel` relative) and the same final
// checkpointed tensors: the whole set within `rel` relative (L2), each
// tensor's largest difference within `tensorRel` of its largest value.
// NOTE [Tensor tolerance]: a sum over ranks adds in another order than one
// process does; AdamW divides by sqrt(v), so in the first steps an element
// whose gradient is nearly zero (a norm bias) moves by about lr whatever its
// gradient's last bits say, and a few such elements may differ by more than
// 1e-5 of their tensor's (small) largest value while the parameters as a
// whole agree to ~1e-7.
inline void expectSameRun(const RunOutput& a, const RunOutput& b, const std::string& what, double rel = 1e-5,
                          double tensorRel = 1e-5) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  ASSERT_FALSE(a.losses.empty()) << what;
  for (size_t i = 0; i < a.losses.size(); ++i) {
    for (const auto& [name, l] : a.losses[i]) {
      ASSERT_TRUE(b.losses[i].count(name)) << what << " step " << i << " " << name;
      EXPECT_NEAR(b.losses[i].at(name), l, rel * std::abs(l)) << what << " step " << i + 1 << " " << name;
    }
  }
  ASSERT_FALSE(a.state.empty()) << what;
  ASSERT_EQ(a.state.size(), b.state.size()) << what;
  double diff2 = 0, norm2 = 0;
  for (const auto& [name, t] : a.state) {
    ASSERT_TRUE(b.state.count(name)) << what << " " << name;
    const auto& u = b.state.at(name);
    const double scale = t.abs().max().item<double>();
    const double diff = (t - u).abs().max().item<double>();
    EXPECT_LE(diff, tensorRel * scale + 1e-9) << what << " " << name << " (max |a| " << scale << ")";
    diff2 += (t.to(torch::kFloat64) - u.to(torch::kFloat64)).pow(2).sum().item<double>();
    norm2 += t.to(torch::kFloat64).pow(2).sum().item<double>();
  }
  EXPECT_LE(std::sqrt(diff2), rel * std::sqrt(norm2)) << what << ": all tensors together";
}

}  // namespace fs::trainer::test

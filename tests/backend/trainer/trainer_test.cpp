// The training run end to end in this process: run directory, telemetry,
// checkpoints read by Python's torch.load, exact resume, torn checkpoints.
#include "backend/trainer/trainer.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_manifest.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/torch_file.h"
#include "backend/trainer/device_choice.h"
#include "engine_test_util.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;

protocol::RunConfig tiny(const std::vector<std::string>& sets = {}) {
  return test::tinyConfig(sets);
}

std::vector<protocol::Event> readEvents(const fsys::path& dir) {
  return test::readEvents(dir, /*finished=*/true);
}

// step -> per-dataset loss, from the step events of a run directory.
std::map<int64_t, std::map<std::string, double>> stepLosses(const fsys::path& dir) {
  std::map<int64_t, std::map<std::string, double>> out;
  for (const auto& e : readEvents(dir)) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out[s->step] = s->loss;
  }
  return out;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_trainer_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(root_);
    fsys::create_directories(root_);
    telemetry::clearStopRequests();
  }
  void TearDown() override { fsys::remove_all(root_); }
  fsys::path root_;
};

TEST_F(TrainerTest, TinyRunWritesTheRunDirectory) {
  const auto dir = root_ / "run";
  auto outcome = runTraining(tiny({"optim.epochs=1"}), dir, TrainerOptions{});
  ASSERT_TRUE(outcome.isOk()) << outcome.status().message();
  EXPECT_EQ(outcome.value(), TrainOutcome::kFinished);
  const auto events = readEvents(dir);
  ASSERT_FALSE(events.empty());
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq, i) << "seq must be gap-free";
  EXPECT_EQ(protocol::eventType(events.front().body), "run_started");
  EXPECT_EQ(protocol::eventType(events.back().body), "state");
  const auto losses = stepLosses(dir);
  ASSERT_EQ(losses.size(), 16u);  // 64 samples / batch 4
  for (const auto& [step, loss] : losses) {
    EXPECT_EQ(loss.size(), 2u);
    for (const auto& [name, l] : loss) EXPECT_TRUE(std::isfinite(l) && l > 0) << name << " at " << step;
  }
  auto manifest = protocol::readManifest(dir);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(manifest->state, protocol::RunState::kFinished);
  EXPECT_TRUE(fsys::exists(dir / "checkpoint_0.pt"));
  EXPECT_TRUE(fsys::exists(dir / "logs/rank-0.log"));
  EXPECT_TRUE(fsys::exists(dir / "config.yaml"));
}

TEST_F(TrainerTest, CheckpointIsReadByPythonTorchLoadInOpenFlamingoLayout) {
  const auto dir = root_ / "run";
  ASSERT_TRUE(runTraining(tiny({"optim.epochs=1"}), dir, TrainerOptions{}).isOk());
  const auto ckpt = dir / "checkpoint_0.pt";
  const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                          "/tests/backend/trainer/check_checkpoint.py '" + ckpt.string() + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["keys"], (nlohmann::json{"epoch", "flamingo_studio", "lr_scheduler_state_dict",
                                       "model_state_dict", "optimizer_state_dict"}));
  EXPECT_EQ(j["epoch"], 0);
  EXPECT_TRUE(j["optimizer_loaded"].get<bool>());
  EXPECT_EQ(j["param_groups"].size(), 2u);
  EXPECT_EQ(j["scheduler"]["last_epoch"], 16);
  // Our torch-free reader (the GUI's inspector) reads our own files too.
  auto file = tensorfile::openTorchFile(ckpt.string());
  ASSERT_TRUE(file.isOk()) << file.status().message();
  const tensorfile::PyValue* msd = file->root().find("model_state_dict");
  ASSERT_NE(msd, nullptr);
  // Every tensor as we wrote it, and OpenFlamingo's key filter.
  auto ours = checkpoint::readCheckpoint(ckpt);
  ASSERT_TRUE(ours.isOk()) << ours.status().message();
  ASSERT_EQ(j["model"].size(), ours->modelState.size());
  EXPECT_EQ(msd->entries.size(), ours->modelState.size());
  bool sawPerceiver = false, sawGate = false, sawEmbedding = false;
  for (const auto& [name, t] : ours->modelState) {
    ASSERT_TRUE(j["model"].contains(name)) << name;
    EXPECT_EQ(j["model"][name]["shape"].get<std::vector<int64_t>>(), t.sizes().vec()) << name;
    EXPECT_NEAR(j["model"][name]["sum"].get<double>(), t.to(torch::kDouble).sum().item<double>(), 1e-9)
        << name;
    sawPerceiver |= name.rfind("perceiver.", 0) == 0;
    sawGate |= name.find("gated_cross_attn_layer.attn_gate") != std::string::npos;
    sawEmbedding |= name.find("embed_tokens") != std::string::npos;
    // Frozen decoder weights are not saved (no "embed" in their names).
    EXPECT_EQ(name.find("decoder_layer.self_attn"), std::string::npos) << name;
  }
  EXPECT_TRUE(sawPerceiver && sawGate && sawEmbedding);
}

TEST_F(TrainerTest, ResumedRunEqualsUninterruptedRun) {
  const auto sets = std::vector<std::string>{"optim.epochs=2", "checkpoint.every_steps=5"};
  const auto full = root_ / "full";
  ASSERT_TRUE(runTraining(tiny(sets), full, TrainerOptions{}).isOk());

  const auto cut = root_ / "cut";
  TrainerOptions stopAt11;
  stopAt11.onProgress = [](const Progress& p) {
    if (p.step == 11) std::raise(SIGTERM);  // the real signal path: graceful stop with a checkpoint
  };
  auto first = runTraining(tiny(sets), cut, stopAt11);
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_EQ(first.value(), TrainOutcome::kStopped);
  EXPECT_EQ(stepLosses(cut).rbegin()->first, 11);
  telemetry::clearStopRequests();
  auto second = runTraining(tiny(sets), cut, TrainerOptions{});
  ASSERT_TRUE(second.isOk()) << second.status().message();
  EXPECT_EQ(second.value(), TrainOutcome::kFinished);

  const auto a = stepLosses(full), b = stepLosses(cut);
  ASSERT_EQ(a.size(), 32u);
  ASSERT_EQ(b.size(), 32u);
  for (const auto& [step, loss] : a) EXPECT_EQ(b.at(step), loss) << "step " << step;
  // Same final weights.
  auto ca = checkpoint::readCheckpoint(full / "checkpoint_1.pt"),
       cb = checkpoint::readCheckpoint(cut / "checkpoint_1.pt");
  ASSERT_TRUE(ca.isOk() && cb.isOk());
  ASSERT_EQ(ca->modelState.size(), cb->modelState.size());
  for (size_t i = 0; i < ca->modelState.size(); ++i) {
    EXPECT_TRUE(torch::equal(ca->modelState[i].second, cb->modelState[i].second)) << ca->modelState[i].first;
  }
}

TEST_F(TrainerTest, TornCheckpointIsNeverPickedUp) {
  const auto dir = root_ / "run";
  ASSERT_TRUE(runTraining(tiny({"optim.epochs=1", "checkpoint.every_steps=4", "checkpoint.keep_last=3"}), dir,
                          TrainerOptions{})
                  .isOk());
  // Cut the newest file in half, as a crash mid-write without our atomic rename would.
  const auto newest = dir / "checkpoint_step16.pt";
  ASSERT_TRUE(fsys::exists(newest));
  fsys::resize_file(newest, fsys::file_size(newest) / 2);
  fsys::remove(dir / "checkpoint_0.pt");
  std::vector<std::string> skipped;
  auto picked = checkpoint::newestCompleteCheckpoint(dir, &skipped);
  ASSERT_TRUE(picked.has_value()) << (skipped.empty() ? "" : skipped[0]);
  EXPECT_EQ(picked->filename(), "checkpoint_step12.pt");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("checkpoint_step16.pt"), std::string::npos) << skipped[0];
}

TEST_F(TrainerTest, ManifestHashesEveryTensorAndADamagedCheckpointIsRefused) {
  const auto dir = root_ / "run";
  ASSERT_TRUE(runTraining(tiny({"optim.epochs=1", "checkpoint.every_steps=4", "checkpoint.keep_last=3"}), dir,
                          TrainerOptions{})
                  .isOk());
  fsys::remove(dir / "checkpoint_0.pt");
  const auto newest = dir / "checkpoint_step16.pt";
  auto ck = checkpoint::readCheckpoint(newest);
  ASSERT_TRUE(ck.isOk()) << ck.status().message();
  ASSERT_TRUE(ck->resume.manifest.tensors.has_value());
  ASSERT_EQ(ck->resume.manifest.tensors->size(), ck->modelState.size());
  for (const auto& t : *ck->resume.manifest.tensors) EXPECT_EQ(t.hash.rfind("xxh64:", 0), 0u) << t.name;
  EXPECT_TRUE(checkpoint::verifyCheckpointManifest(ck->resume.manifest, ck->modelState, newest).isOk());

  // One weight changed under an unchanged manifest: what a damaged or hand-edited file looks like.
  for (auto& [name, t] : ck->modelState) {
    if (name == "perceiver.latents") t = t.clone().add_(1e-3);
  }
  ASSERT_TRUE(checkpoint::writeCheckpoint(newest, ck.value()).isOk());
  const auto refused = checkpoint::verifyCheckpointManifest(ck->resume.manifest, ck->modelState, newest);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("'perceiver.latents' does not match its manifest hash"), std::string::npos)
      << refused.message();

  // An explicit resume refuses it by name ...
  auto explicitResume = runTraining(tiny({"optim.epochs=1", "checkpoint.resume_from=" + newest.string()}),
                                    root_ / "other", TrainerOptions{});
  ASSERT_FALSE(explicitResume.isOk());
  EXPECT_NE(explicitResume.status().message().find("perceiver.latents"), std::string::npos)
      << explicitResume.status().message();
  // ... and the automatic one falls back to the previous checkpoint with a warning.
  auto resumed = runTraining(tiny({"optim.epochs=1", "checkpoint.every_steps=4", "checkpoint.keep_last=3"}),
                             dir, TrainerOptions{});
  ASSERT_TRUE(resumed.isOk()) << resumed.status().message();
  bool warned = false;
  int starts = 0;
  int64_t firstStep = -1;  // of the second run
  for (const auto& e : test::readEvents(dir, /*finished=*/true)) {
    if (std::holds_alternative<protocol::RunStartedEvent>(e.body)) ++starts;
    if (const auto* w = std::get_if<protocol::WarningEvent>(&e.body)) {
      warned = warned ||
               (w->code == "checkpoint_skipped" && w->message.find("perceiver.latents") != std::string::npos);
    }
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body); s && starts == 2 && firstStep < 0) {
      firstStep = s->step;
    }
  }
  EXPECT_TRUE(warned);
  EXPECT_EQ(firstStep, 13);  // continued after checkpoint_step12.pt
}

TEST_F(TrainerTest, BadSetupIsAClearErrorNotACrash) {
  auto config = tiny();
  config.model.lm.path = "/nonexistent/opt";
  auto outcome = runTraining(config, root_ / "run", TrainerOptions{});
  ASSERT_FALSE(outcome.isOk());
  EXPECT_NE(outcome.status().message().find("model.lm.path"), std::string::npos)
      << outcome.status().message();
  auto m = protocol::readManifest(root_ / "run");
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->state, protocol::RunState::kFailed);
}

// NOTE [Device choice]: parallel.device=cuda where this process has no GPU stops the run at set-up, naming
// the field and what is missing; auto (the default, every test above) trains on the CPU here.
TEST_F(TrainerTest, CudaWithoutAGpuIsAClearError) {
  const DeviceFacts here = currentDeviceFacts();
  if (here.builtWithCuda && here.cudaDevices > 0) GTEST_SKIP() << "this machine has a GPU";
  auto config = tiny();
  config.parallel.device = "cuda";
  auto outcome = runTraining(config, root_ / "run", TrainerOptions{});
  ASSERT_FALSE(outcome.isOk());
  EXPECT_NE(outcome.status().message().find("parallel.device is cuda, but "), std::string::npos)
      << outcome.status().message();
  auto m = protocol::readManifest(root_ / "run");
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->state, protocol::RunState::kFailed);
}

}  // namespace
}  // namespace fs::trainer

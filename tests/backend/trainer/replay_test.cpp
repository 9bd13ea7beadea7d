// `flamingo-train replay` against OpenFlamingo's step written in plain Python
// torch (replay_reference.py with FS_PYTHON's torch): the same initial
// weights and batches must give the same losses at every iteration and the
// same final trainable parameters, read back by Python's torch.load.
#include "backend/trainer/replay.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/data/synthetic_source.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/derived.h"
#include "backend/runtime/torch_pickle.h"
#include "engine_test_util.h"
#include "replay_test_util.h"

namespace fs::trainer {
namespace {

namespace fsys = std::filesystem;
using test::Command;
using test::parseReplayLosses;
using test::run;

constexpr int kIterations = 6;

void writeBytes(const fsys::path& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string configJson(const protocol::RunConfig& config) {
  const auto& m = config.model;
  const auto figures = protocol::deriveFigures(config);
  nlohmann::json j = {{"family", m.lm.family},
                      {"patch_size", m.vision.patch_size},
                      {"vision_layers", m.vision.layers},
                      {"vision_heads", m.vision.heads},
                      {"quick_gelu", m.vision.quick_gelu},
                      {"ln_post_on_tokens", m.vision.ln_post_on_tokens},
                      {"perceiver_depth", m.perceiver.depth},
                      {"perceiver_heads", m.perceiver.heads},
                      {"perceiver_head_dim", m.perceiver.head_dim},
                      {"xattn_heads", m.cross_attn.heads},
                      {"xattn_head_dim", m.cross_attn.head_dim},
                      {"every_n", m.cross_attn.every_n_layers},
                      {"lm_layers", m.lm.layers},
                      {"lm_heads", m.lm.heads},
                      {"tied", m.lm.tied_head},
                      {"norm_eps", 1e-5},
                      {"image_id", m.tokens.image_id},
                      {"endofchunk_id", m.tokens.endofchunk_id},
                      {"pad_id", m.tokens.pad_id},
                      {"input_embedding", "lang_encoder.model.decoder.embed_tokens.weight"},
                      {"freeze_lm_embeddings", m.freeze_lm_embeddings},
                      {"lr", config.optim.lr},
                      {"weight_decay", config.optim.weight_decay},
                      {"beta1", config.optim.beta1},
                      {"beta2", config.optim.beta2},
                      {"eps", config.optim.eps},
                      {"max_grad_norm", config.optim.max_grad_norm},
                      {"warmup_steps", config.optim.warmup_steps},
                      {"scheduler", config.optim.scheduler},
                      {"scheduler_steps", figures.schedulerSteps},
                      {"loss_multiplier_laion", config.data.datasets.at(0).loss_multiplier},
                      {"loss_multiplier_mmc4", config.data.datasets.at(1).loss_multiplier}};
  return j.dump(2);
}

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fsys::temp_directory_path() / ("fs_replay_" + std::to_string(::getpid()));
    fsys::remove_all(root_);
    fsys::create_directories(root_);
    config_ = test::tinyConfig({"optim.epochs=1"});
    ASSERT_TRUE(protocol::saveConfigFile(config_, (root_ / "config.yaml").string()).isOk());
  }
  void TearDown() override { fsys::remove_all(root_); }

  // A user's starting point: the tiny model's init with open gates (so every
  // trainable part gets a gradient) and the synthetic source's batches.
  void writeSeed() {
    torch::manual_seed(5);
    model::Flamingo m(model::FlamingoOptions::fromConfig(config_.model));
    c10::Dict<std::string, torch::Tensor> init;
    for (const auto& [name, t] : m->namedParameters()) {
      torch::Tensor v = t.detach().clone();
      if (name.find("_gate") != std::string::npos) v.fill_(0.3);
      init.insert(name, v);
    }
    auto source = data::SyntheticSource::create(config_, 0, 1);
    ASSERT_TRUE(source.isOk()) << source.status().message();
    source.value()->setEpoch(0);
    c10::impl::GenericList batches(c10::AnyType::get());
    for (int k = 0; k < kIterations; ++k) {
      auto next = source.value()->next();
      ASSERT_TRUE(next.isOk() && next->has_value());
      c10::impl::GenericDict step(c10::StringType::get(), c10::AnyType::get());
      for (const auto& b : next.value()->batches) {
        step.insert(b.dataset, c10::ivalue::Tuple::create(
                                   std::vector<c10::IValue>{b.images, b.inputIds, b.attentionMask}));
      }
      batches.push_back(step);
    }
    c10::impl::GenericDict seed(c10::StringType::get(), c10::AnyType::get());
    seed.insert("init", init);
    seed.insert("batches", batches);
    writeBytes(root_ / "seed.pt", fs::runtime::pickleForTorchLoad(seed));
    std::ofstream(root_ / "config.json") << configJson(config_);
  }

  std::string python(const std::string& args) {
    return std::string(FS_PYTHON) + " " + FS_SOURCE_DIR + "/tests/backend/trainer/replay_reference.py " +
           args;
  }
  std::string replay(const std::string& args) {
    return std::string(FS_BINARY_DIR) + "/bin/flamingo-train replay " + args;
  }

  fsys::path root_;
  protocol::RunConfig config_;
};

TEST_F(ReplayTest, LossesAndFinalWeightsEqualPythons) {
  writeSeed();
  const auto made = run(python("make " + root_.string()));
  ASSERT_EQ(made.status, 0) << made.output;

  const auto out = root_ / "ours.pt";
  const auto ours = run(replay("--config " + (root_ / "config.yaml").string() + " --reference " +
                               (root_ / "reference.pt").string() + " --out " + out.string() + " --run-dir " +
                               (root_ / "run").string()));
  ASSERT_EQ(ours.status, 0) << ours.output;
  const auto losses = parseReplayLosses(ours.output);
  ASSERT_EQ(losses.size(), static_cast<size_t>(kIterations)) << ours.output;

  std::ifstream expected(root_ / "expected_losses.txt");
  for (int k = 0; k < kIterations; ++k) {
    double laion = 0, mmc4 = 0;
    ASSERT_TRUE(expected >> laion >> mmc4);
    EXPECT_NEAR(losses[k].first, laion, 1e-5 * std::abs(laion)) << "iteration " << k + 1;
    EXPECT_NEAR(losses[k].second, mmc4, 1e-5 * std::abs(mmc4)) << "iteration " << k + 1;
  }
  const auto checked = run(python("check " + root_.string() + " " + out.string()));
  EXPECT_EQ(checked.status, 0) << checked.output;
  std::cout << checked.output;
  // The replay is a real run directory too.
  bool finished = false;
  for (const auto& e : test::readEvents(root_ / "run", /*finished=*/true)) {
    finished = finished || std::holds_alternative<protocol::RunFinishedEvent>(e.body);
  }
  EXPECT_TRUE(finished);
}

TEST_F(ReplayTest, BadReferencesAreClearErrors) {
  writeSeed();
  ASSERT_EQ(run(python("make " + root_.string())).status, 0);
  const std::string config = " --config " + (root_ / "config.yaml").string();
  // Not a torch.save file.
  std::ofstream(root_ / "junk.pt") << "not a checkpoint";
  auto r = run(replay(config + " --reference " + (root_ / "junk.pt").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("junk.pt"), std::string::npos) << r.output;
  // A dict without the keys.
  writeBytes(root_ / "nokeys.pt", fs::runtime::pickleForTorchLoad(
                                      c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get())));
  r = run(replay(config + " --reference " + (root_ / "nokeys.pt").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no 'init' dict"), std::string::npos) << r.output;
  // The wrong model: the config's LM is wider than the reference's weights.
  r = run(replay(config + " --set model.lm.width=64 --set model.lm.ffn_dim=128 --reference " +
                 (root_ / "reference.pt").string() + " --run-dir " + (root_ / "wide").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("mis-shaped"), std::string::npos) << r.output;
  // Images of another size than the config's vision tower takes.
  r = run(replay(config + " --set model.vision.image_size=64 --reference " +
                 (root_ / "reference.pt").string() + " --run-dir " + (root_ / "big").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("model.vision.image_size"), std::string::npos) << r.output;
  // A run directory that already holds checkpoints is not a replay's.
  ASSERT_EQ(run(std::string(FS_BINARY_DIR) + "/bin/flamingo-train train" + config + " --run-dir " +
                (root_ / "trained").string())
                .status,
            0);
  r = run(replay(config + " --reference " + (root_ / "reference.pt").string() + " --run-dir " +
                 (root_ / "trained").string()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("holds checkpoints"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fs::trainer

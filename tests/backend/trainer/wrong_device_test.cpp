// wrong_device_test: the training step creates every tensor on the device of
// the model or the batch (issue 28, "One device per rank"). The tiny preset's
// model is built on the meta device and one step of synthetic LAION and MMC4
// batches runs on it: forward, loss and backward under a DeviceCheckScope
// (NOTE [Catching a tensor on the wrong device] in device_check.h), which
// names every op that takes or makes a tensor elsewhere (a factory without
// its device, a CPU table). The meta device also stops at every read-back of
// a device value (item, nonzero, .cpu(), data_ptr): a host sync in the step
// fails the test too.
//
// The step mirrors Trainer::forwardLoss and trainIteration's backward
// (backend/trainer/trainer_step.cpp) with the same library calls, as
// step_budget_test does: host-side decisions on the host batch (labels, their
// target count, the padding policy, the model's index sets), data::toDevice,
// forward, causalLmLoss, backward. Autocast is left out (meta has no autocast key); the precision
// casts are device-generic ops.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "backend/data/batch.h"
#include "backend/data/special_tokens.h"
#include "backend/data/synthetic_source.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"
#include "backend/trainer/device_batch.h"
#include "tests/backend/trainer/device_check.h"

namespace fs::testing {
namespace {

const c10::Device kMeta(c10::kMeta);

protocol::RunConfig tinyConfig(const std::string& family, bool checkpointing) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  protocol::RunConfig c = load.config;
  c.model.lm.family = family;
  if (family == "gpt_neox" || family == "llama") c.model.lm.tied_head = false;
  c.model.gradient_checkpointing = checkpointing;
  return c;
}

data::StepBatches hostBatches(const protocol::RunConfig& config) {
  auto created = data::SyntheticSource::create(config, 0, 1);
  EXPECT_TRUE(created.isOk()) << created.status().message();
  auto next = created.value()->next();
  EXPECT_TRUE(next.isOk() && next.value()) << "the synthetic source gave no batches";
  return std::move(*next.value());
}

model::Flamingo buildOn(c10::Device device, const protocol::RunConfig& config) {
  model::Flamingo model{nullptr};
  {
    DefaultDeviceScope on(device);
    model = model::Flamingo(model::FlamingoOptions::fromConfig(config.model));
  }
  model->freezeAsOpenFlamingo();
  model->train();
  for (const auto& [name, t] : model->namedParameters()) {
    EXPECT_EQ(t.device(), device) << name << " was not built on " << device;
  }
  return model;
}

struct StepOnDevice {
  std::vector<std::string> violations;
  int64_t opsChecked = 0;
  std::string stopped;  // why the step stopped on the device (a read-back, a mixed-device op); "" = it ran
};

// One step of every dataset's batch on `device`, as the trainer takes it.
// hostIndexSets: the index sets from the host batch, as the trainer passes them (NOTE [Index sets from
// the host] in backend/model/common.h); false: the model picks them from the device tensors.
StepOnDevice runStep(model::Flamingo& model, const protocol::RunConfig& config, c10::Device device,
                     bool hostIndexSets = true) {
  const data::SpecialTokenIds tokens = data::specialTokensFromConfig(config.model.tokens);
  const data::StepBatches host = hostBatches(config);
  StepOnDevice out;
  for (const data::Batch& hb : host.batches) {
    // Host side (Trainer::trainIteration, Trainer::forwardLoss).
    const torch::Tensor hostLabels = step::makeLabels(hb.kind, hb.inputIds, tokens);
    const trainer::DeviceBatch d = trainer::toDeviceForForward(
        *model, hb, hostLabels, tokens.pad, config.model.lm.width, config.compat == "openflamingo", device);
    // Device side, checked.
    DeviceCheckScope check(device);
    try {
      const step::LmLoss loss = trainer::forwardLossOn(*model, d, torch::kFloat32, hostIndexSets);
      (loss.loss * 0.5).backward();
    } catch (const c10::Error& e) {  // a read-back of a device value, an op without a meta kernel
      const std::string what = e.what_without_backtrace();
      out.stopped = what.substr(0, what.find('\n'));
    }
    const auto v = check.violations();
    out.violations.insert(out.violations.end(), v.begin(), v.end());
    out.opsChecked += check.opsChecked();
    if (!out.stopped.empty()) break;
  }
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 20; ++i) s += "\n  " + v[i];
  if (v.size() > 20) s += "\n  ... and " + std::to_string(v.size() - 20) + " more";
  return s;
}

void expectEverythingOnMeta(const std::string& family, bool checkpointing) {
  const protocol::RunConfig config = tinyConfig(family, checkpointing);
  model::Flamingo model = buildOn(kMeta, config);
  const std::string what = family + (checkpointing ? " with checkpointing" : "");
  const StepOnDevice step = runStep(model, config, kMeta);
  EXPECT_TRUE(step.violations.empty())
      << what << ": tensors off the step's device:" << listed(step.violations);
  ASSERT_EQ(step.stopped, "") << what << ": the step stopped on the meta device";
  EXPECT_GT(step.opsChecked, 500) << "the check saw too few ops to have seen the step";
  int64_t withGrad = 0;
  for (const auto& [name, t] : model->namedParameters()) {
    if (!t.grad().defined()) continue;
    ++withGrad;
    EXPECT_EQ(t.grad().device(), kMeta) << name;
  }
  EXPECT_GT(withGrad, 0) << "the backward reached no parameter";
}

TEST(WrongDevice, TheTinyStepStaysOnTheMetaDevice) {
  expectEverythingOnMeta("opt", false);
}

TEST(WrongDevice, EveryLmFamilyStaysOnTheMetaDevice) {
  for (const std::string family : {"mpt", "gpt_neox", "llama"}) expectEverythingOnMeta(family, false);
}

TEST(WrongDevice, ActivationCheckpointingStaysOnTheMetaDevice) {
  expectEverythingOnMeta("opt", true);
}

// The compare shapes (bench/configs/compare.yaml) take the paths the tiny preset does not (NOTE [When
// skipping pays] in backend/model/common.h): skipped padding, unreferenced media slots, attending tokens.
// With the index sets from the host they run on the meta device too; picked by the model from device
// tensors they stop at a read-back (what the model still does when no caller gives them: tests, replay).
TEST(WrongDevice, TheShapesThatLeaveWorkOutStayOnTheMetaDeviceWithHostIndexSets) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/bench/configs/compare.yaml");
  ASSERT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  const protocol::RunConfig& config = load.config;
  const data::SpecialTokenIds tokens = data::specialTokensFromConfig(config.model.tokens);
  for (const data::Batch& hb : hostBatches(config).batches) {  // the paths are taken, or this tests nothing
    const auto padding = model::paddingFor(hb.inputIds, hb.attentionMask, tokens.pad, config.model.lm.width);
    ASSERT_EQ(padding, model::Padding::kSkip) << hb.dataset;
  }
  model::Flamingo model = buildOn(kMeta, config);
  const StepOnDevice step = runStep(model, config, kMeta);
  EXPECT_TRUE(step.violations.empty()) << "tensors off the step's device:" << listed(step.violations);
  EXPECT_EQ(step.stopped, "") << "the compare step stopped on the meta device";
  EXPECT_GT(step.opsChecked, 500);
  const StepOnDevice picked = runStep(model, config, kMeta, /*hostIndexSets=*/false);
  EXPECT_NE(picked.stopped, "")
      << "the model's own picks ran on meta without a read-back: update NOTE [Index "
         "sets from the host]";
}

// The check itself: a factory without its device, and a CPU operand that
// matmul would silently accept on meta, are both named.
TEST(WrongDevice, TheCheckNamesAFactoryWithoutItsDevice) {
  const auto x = torch::ones({2, 3}, torch::TensorOptions().device(kMeta));
  std::vector<std::string> v;
  {
    DeviceCheckScope check(kMeta);
    const auto cpuTable = torch::ones({3, 3});  // the bug: no device
    const auto y = torch::matmul(x, cpuTable);  // 1.13 returns a meta tensor here, no error
    EXPECT_EQ(y.device(), kMeta);
    v = check.violations();
  }
  ASSERT_GE(v.size(), 2u) << listed(v);
  EXPECT_EQ(v[0], "aten::ones: output 0 is on cpu, expected meta");
  EXPECT_EQ(v[1], "aten::matmul: input 1 is on cpu, expected meta");
}

TEST(WrongDevice, ScalarsAndTheRightDevicePass) {
  const auto x = torch::ones({2, 3}, torch::TensorOptions().device(kMeta));
  DeviceCheckScope check(kMeta);
  const auto y = (x * 2.0 + torch::zeros({}, torch::kFloat)).sum();  // a 0-dim CPU tensor is a scalar
  EXPECT_EQ(y.device(), kMeta);
  EXPECT_TRUE(check.violations().empty()) << listed(check.violations());
  EXPECT_GT(check.opsChecked(), 0);
}

// What the meta run cannot pass: a read-back of a device value (a host sync on a GPU).
TEST(WrongDevice, AReadBackStopsTheMetaRun) {
  const auto x = torch::ones({4}, torch::TensorOptions().device(kMeta));
  DeviceCheckScope check(kMeta);
  EXPECT_ANY_THROW(x.sum().item<double>());
  EXPECT_ANY_THROW(x.nonzero());
}

}  // namespace
}  // namespace fs::testing

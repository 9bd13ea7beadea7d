// The training run on a CUDA device (label gpu: Not Run without one), in this
// process, on the tiny preset's synthetic batches:
// - fp32 on cuda:0 against the same config and batches on the CPU: every step's
//   losses within 1e-4 relative;
// - amp_bf16 and amp_fp16 (fp32 weights), bf16 and fp16 (half weights: FSDP at
//   one rank, NOTE [Half weights need FSDP] in validate.cpp) train without a
//   non-finite loss, the fp16 ones with dynamic loss scaling, and a second run
//   of the same config reproduces the first one exactly (same batches, kernels,
//   order).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/trainer.h"
#include "engine_test_util.h"

namespace fs::trainer {
namespace {

class DeviceTrainingTest : public test::RunRootTest {
 protected:
  std::vector<protocol::StepEvent> run(const std::string& name, const std::vector<std::string>& sets) {
    TrainerOptions o;
    o.disableDropout = true;  // a dropout mask drawn on another device's generator differs
    auto outcome = runTraining(test::tinyConfig(sets), root_ / name, o);
    EXPECT_TRUE(outcome.isOk()) << name << ": " << outcome.status().message();
    return outcome.isOk() ? test::stepEvents(root_ / name) : std::vector<protocol::StepEvent>{};
  }
};

TEST_F(DeviceTrainingTest, Fp32OnTheGpuMatchesTheCpuRun) {
  const auto cpu = run("cpu", {"optim.epochs=1", "parallel.device=cpu"});
  const auto gpu = run("gpu", {"optim.epochs=1", "parallel.device=cuda"});
  ASSERT_EQ(cpu.size(), 16u);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    for (const auto& [name, l] : cpu[i].loss) {
      const double g = gpu[i].loss.at(name);
      EXPECT_LE(std::abs(g - l), 1e-4 * std::abs(l))
          << "step " << cpu[i].step << " " << name << ": cpu " << l << ", gpu " << g;
    }
  }
}

class LowPrecisionOnTheGpu : public DeviceTrainingTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(LowPrecisionOnTheGpu, TrainsWithoutNanAndReproducesItself) {
  const std::string precision = GetParam();
  std::vector<std::string> sets = {"optim.epochs=2", "parallel.device=cuda", "optim.precision=" + precision};
  if (precision.rfind("amp_", 0) != 0) sets.push_back("parallel.mode=fsdp");
  const auto first = run("first", sets);
  const auto second = run("second", sets);
  ASSERT_EQ(first.size(), 32u);
  ASSERT_EQ(second.size(), first.size());
  size_t stepped = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    for (const auto& [name, l] : first[i].loss) EXPECT_TRUE(std::isfinite(l)) << precision << " step " << i;
    stepped += first[i].skipped ? 0 : 1;
    EXPECT_EQ(second[i].loss, first[i].loss) << precision << " step event " << i;
    EXPECT_EQ(second[i].loss_scale, first[i].loss_scale) << precision << " step event " << i;
    EXPECT_EQ(first[i].loss_scale.has_value(), precision.find("fp16") != std::string::npos);
  }
  EXPECT_GE(stepped, first.size() - 4) << precision << ": more than a few overflow skips";
}

INSTANTIATE_TEST_SUITE_P(Precisions, LowPrecisionOnTheGpu,
                         ::testing::Values("amp_bf16", "amp_fp16", "bf16", "fp16"));

}  // namespace
}  // namespace fs::trainer

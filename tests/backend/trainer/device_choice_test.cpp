// parallel.device resolved for every combination of choice, CUDA build,
// device count and local rank (NOTE [Device choice] in
// backend/trainer/device_choice.h); runs on a CPU-only machine.
#include "backend/trainer/device_choice.h"

#include <gtest/gtest.h>

#include <string>

namespace fs::trainer {
namespace {

DeviceFacts facts(bool built, int64_t devices) {
  DeviceFacts f;
  f.builtWithCuda = built;
  f.cudaDevices = devices;
  return f;
}

torch::Device chosen(const std::string& choice, int64_t localRank, const DeviceFacts& f) {
  auto d = chooseDevice(choice, localRank, f);
  EXPECT_TRUE(d.isOk()) << choice << " rank " << localRank << ": " << d.status().message();
  return d.isOk() ? d.value() : torch::Device(torch::kMeta);
}

std::string failure(const std::string& choice, int64_t localRank, const DeviceFacts& f) {
  auto d = chooseDevice(choice, localRank, f);
  EXPECT_FALSE(d.isOk()) << choice << " rank " << localRank << " gave " << (d.isOk() ? d->str() : "");
  return d.isOk() ? "" : d.status().message();
}

TEST(DeviceChoice, CpuIsTheHostWhateverTheMachineHas) {
  for (const auto& f : {facts(false, 0), facts(true, 0), facts(true, 8)}) {
    for (int64_t rank : {0, 3, 9}) EXPECT_EQ(chosen("cpu", rank, f), torch::Device(torch::kCPU));
  }
}

TEST(DeviceChoice, AutoTakesTheLocalRanksGpuElseTheHost) {
  EXPECT_EQ(chosen("auto", 0, facts(true, 8)), torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(chosen("auto", 5, facts(true, 8)), torch::Device(torch::kCUDA, 5));
  EXPECT_EQ(chosen("auto", 7, facts(true, 8)), torch::Device(torch::kCUDA, 7));
  // No CUDA build, no device, or more ranks than GPUs on the node: the host.
  EXPECT_EQ(chosen("auto", 0, facts(false, 0)), torch::Device(torch::kCPU));
  EXPECT_EQ(chosen("auto", 0, facts(false, 4)), torch::Device(torch::kCPU));  // counts only with a build
  EXPECT_EQ(chosen("auto", 0, facts(true, 0)), torch::Device(torch::kCPU));
  EXPECT_EQ(chosen("auto", 8, facts(true, 8)), torch::Device(torch::kCPU));
}

TEST(DeviceChoice, CudaTakesTheLocalRanksGpu) {
  EXPECT_EQ(chosen("cuda", 0, facts(true, 1)), torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(chosen("cuda", 3, facts(true, 4)), torch::Device(torch::kCUDA, 3));
}

TEST(DeviceChoice, CudaWithoutABuildSaysSo) {
  const std::string m = failure("cuda", 0, facts(false, 0));
  EXPECT_NE(m.find("parallel.device"), std::string::npos) << m;
  EXPECT_NE(m.find("built without CUDA"), std::string::npos) << m;
  EXPECT_NE(m.find("parallel.device=auto or cpu"), std::string::npos) << m;
}

TEST(DeviceChoice, CudaWithoutADeviceSaysSo) {
  const std::string m = failure("cuda", 0, facts(true, 0));
  EXPECT_NE(m.find("parallel.device"), std::string::npos) << m;
  EXPECT_NE(m.find("no CUDA device is visible"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << m;
}

TEST(DeviceChoice, CudaWithMoreRanksThanGpusNamesTheRankAndTheCount) {
  const std::string m = failure("cuda", 2, facts(true, 2));
  EXPECT_NE(m.find("parallel.device"), std::string::npos) << m;
  EXPECT_NE(m.find("local rank 2"), std::string::npos) << m;
  EXPECT_NE(m.find("2 CUDA device(s), cuda:0..cuda:1"), std::string::npos) << m;
}

TEST(DeviceChoice, AnUnknownChoiceNamesTheField) {
  const std::string m = failure("gpu", 0, facts(true, 1));
  EXPECT_NE(m.find("parallel.device: 'gpu' is not one of auto, cpu, cuda"), std::string::npos) << m;
}

TEST(DeviceChoice, ThisProcessFactsAgreeWithTheBuild) {
  const DeviceFacts f = currentDeviceFacts();
#ifdef FS_WITH_CUDA
  EXPECT_TRUE(f.builtWithCuda);
#else
  EXPECT_FALSE(f.builtWithCuda);
  EXPECT_EQ(f.cudaDevices, 0);
  // This machine: auto is the host, cuda a clear error.
  EXPECT_EQ(chosen("auto", 0, f), torch::Device(torch::kCPU));
  EXPECT_NE(failure("cuda", 0, f).find("built without CUDA"), std::string::npos);
#endif
}

}  // namespace
}  // namespace fs::trainer

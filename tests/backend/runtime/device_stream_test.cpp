// DeviceStreams (backend/runtime/device_stream.h): the no-op every device but
// CUDA gets (NOTE [No-op streams]): events complete, scopes nest and restore
// without changing anything, no ATen op and no allocation; a CUDA device on a
// build without CUDA is refused by name. The CUDA cases run only where a CUDA
// device is usable (they skip here, saying so).
#include "backend/runtime/device_stream.h"

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <string>

#include "backend/runtime/runtime_info.h"

namespace fs::runtime {
namespace {

TEST(DeviceStreams, CpuGetsTheNoOp) {
  DeviceStreams s(torch::kCPU);
  EXPECT_FALSE(s.active());
  EXPECT_EQ(s.device(), torch::Device(torch::kCPU));
  EXPECT_EQ(s.current(), s.communication());  // one stream: work runs in issue order
  EXPECT_EQ(s.current(), c10::Stream(c10::Stream::DEFAULT, torch::Device(torch::kCPU)));
}

TEST(DeviceStreams, MetaGetsTheNoOp) {
  DeviceStreams s(torch::Device(torch::kMeta));
  EXPECT_FALSE(s.active());
  EXPECT_EQ(s.current().device(), torch::Device(torch::kMeta));
}

TEST(DeviceStreams, NoOpEventsAreComplete) {
  DeviceStreams s(torch::kCPU);
  const DeviceEvent e = s.record(s.communication());
  EXPECT_TRUE(e.query());
  e.synchronize();  // returns at once
  s.wait(s.current(), e);
  s.waitFor(s.current(), s.communication());
  s.synchronize();
  EXPECT_TRUE(DeviceEvent().query());  // a default event is complete too
}

TEST(DeviceStreams, NoOpScopesNestAndRestore) {
  DeviceStreams s(torch::kCPU);
  const c10::Stream before = s.current();
  {
    StreamScope outer(s, s.communication());
    EXPECT_EQ(s.current(), s.communication());
    {
      StreamScope inner(s, before);
      EXPECT_EQ(s.current(), before);
    }
    EXPECT_EQ(s.current(), s.communication());
  }
  EXPECT_EQ(s.current(), before);
}

// The no-op adds no ATen op (RecordFunction sees every op, as step_budget_test counts them) and leaves a
// tensor recorded on a stream untouched.
TEST(DeviceStreams, NoOpRunsNoAtenOp) {
  DeviceStreams s(torch::kCPU);
  torch::Tensor t = torch::arange(4, torch::kFloat);
  static std::atomic<int> ops{0};
  ops = 0;
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
        ++ops;
        return nullptr;
      }));
  {
    StreamScope scope(s, s.communication());
    const DeviceEvent e = s.record(s.communication());
    s.wait(s.current(), e);
    s.recordTensor(t, s.current());
    s.recordTensor(torch::Tensor(), s.current());
    s.synchronize();
    EXPECT_TRUE(e.query());
  }
  const int noOps = ops.load();
  const torch::Tensor u = t + 1;  // the counter does see a real op
  const int oneOp = ops.load();
  at::removeCallback(handle);
  EXPECT_EQ(noOps, 0);
  EXPECT_GT(oneOp, 0);
  EXPECT_TRUE(torch::equal(t, torch::arange(4, torch::kFloat)));
}

TEST(DeviceStreams, MovesKeepTheImplementation) {
  DeviceStreams a(torch::kCPU);
  DeviceStreams b(std::move(a));
  EXPECT_FALSE(b.active());
  EXPECT_EQ(b.device(), torch::Device(torch::kCPU));
}

// NOTE [No-op streams]: a CUDA device on a build without CUDA is an error naming the device and the
// build, not a silent no-op.
TEST(DeviceStreams, CudaWithoutACudaBuildIsRefusedByName) {
  if (builtWithCuda()) GTEST_SKIP() << "built with CUDA: the CUDA cases below run instead";
  try {
    DeviceStreams s(torch::Device(torch::kCUDA, 0));
    FAIL() << "a CUDA device got streams on a build without CUDA";
  } catch (const c10::Error& e) {
    const std::string m = e.what_without_backtrace();
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
    EXPECT_NE(m.find("built without"), std::string::npos) << m;
  }
}

// On a GPU: the communication stream is its own; work on it ordered before the current stream's through
// an event gives the right values; scopes switch CUDA's current stream and restore it.
TEST(DeviceStreams, CudaOrdersWorkAcrossStreams) {
  if (!cudaAvailable()) GTEST_SKIP() << "no CUDA device";
  const torch::Device dev(torch::kCUDA, 0);
  DeviceStreams s(dev);
  ASSERT_TRUE(s.active());
  EXPECT_NE(s.current(), s.communication());
  const c10::Stream compute = s.current();
  torch::Tensor out;
  {
    StreamScope scope(s, s.communication());
    EXPECT_EQ(s.current(), s.communication());
    torch::Tensor big = torch::ones({1 << 22}, torch::TensorOptions(dev));
    for (int i = 0; i < 20; ++i) big = big * 1.0001;  // a long queue on the communication stream
    out = big.sum();
    s.recordTensor(out, compute);
  }
  EXPECT_EQ(s.current(), compute);
  s.waitFor(compute, s.communication());
  const double got = (out * 2).item<double>();  // on the compute stream, after the event
  EXPECT_NEAR(got, 2.0 * (1 << 22) * std::pow(1.0001, 20), 1e-2 * (1 << 22));
  const DeviceEvent e = s.record(compute);
  e.synchronize();
  EXPECT_TRUE(e.query());
  s.synchronize();
}

}  // namespace
}  // namespace fs::runtime

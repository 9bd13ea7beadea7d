// OpCounter (op_counter.h) on computations whose ops are known: what counts as
// top-level, nested and backward nodes, and that counting stops with the counter.
#include "tests/backend/trainer/op_counter.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

namespace fs::testing {
namespace {

std::int64_t at(const OpTally& tally, const std::string& name) {
  const auto it = tally.find(name);
  return it == tally.end() ? 0 : it->second;
}

TEST(OpCounterTest, CountsTopLevelOpsAndTheOpsInsideThem) {
  const torch::Tensor x = torch::rand({3, 4});
  const torch::Tensor w = torch::rand({5, 4});
  OpCounter counter;
  const torch::Tensor y = torch::linear(x, w);  // linear -> t, matmul -> mm (ops inside an op)
  const torch::Tensor z = y.add(1.0);
  const OpCounts c = counter.take();
  EXPECT_EQ(at(c.topLevel, "aten::linear"), 1);
  EXPECT_EQ(at(c.topLevel, "aten::add"), 1);
  EXPECT_EQ(at(c.topLevel, "aten::mm"), 0);  // called inside linear, not by us
  EXPECT_EQ(at(c.all, "aten::linear"), 1);
  EXPECT_GE(at(c.all, "aten::mm"), 1);
  EXPECT_GT(OpCounts::total(c.all), OpCounts::total(c.topLevel));
  EXPECT_TRUE(c.backwardNodes.empty());
  // take() starts a new interval.
  EXPECT_EQ(OpCounts::total(counter.take().all), 0);
}

TEST(OpCounterTest, CountsBackwardNodesApartFromTheOpsTheyCall) {
  const torch::Tensor x = torch::rand({3, 4}, torch::requires_grad());
  const torch::Tensor loss = (x * 2.0).sum();
  OpCounter counter;
  loss.backward();
  const OpCounts c = counter.take();
  EXPECT_EQ(at(c.backwardNodes, "SumBackward0"), 1);
  EXPECT_EQ(at(c.backwardNodes, "MulBackward1"), 1);  // mul by a Scalar
  EXPECT_EQ(at(c.backwardNodes, "torch::autograd::AccumulateGrad"), 1);
  EXPECT_EQ(OpCounts::total(c.backwardNodes), 3);
  EXPECT_EQ(at(c.topLevel, "aten::ones_like"), 1);  // the seed gradient
  EXPECT_EQ(at(c.topLevel, "aten::mul"), 1);        // MulBackward1's formula: grad * 2, top-level
  EXPECT_EQ(at(c.topLevel, "aten::expand"), 1);     // SumBackward0's formula
  // The engine's per-node wrapper records are not ops.
  for (const auto& [name, n] : c.all) EXPECT_EQ(name.find("evaluate_function"), std::string::npos) << name;
}

TEST(OpCounterTest, StopsCountingWhenDestroyedAndIsOneAtATime) {
  const torch::Tensor x = torch::rand({4});
  {
    OpCounter counter;
    EXPECT_THROW(OpCounter second, std::logic_error);
    (void)x.add(1.0);
    EXPECT_EQ(at(counter.take().topLevel, "aten::add"), 1);
  }
  (void)x.add(1.0);  // nobody counts this one
  OpCounter again;   // starts from zero
  EXPECT_EQ(OpCounts::total(again.take().all), 0);
}

TEST(OpCounterTest, TopOrdersByCountThenName) {
  const OpTally tally{{"b", 2}, {"a", 2}, {"c", 5}, {"d", 1}};
  const auto top = OpCounts::top(tally, 3);
  ASSERT_EQ(top.size(), 3U);
  EXPECT_EQ(top[0], (std::pair<std::string, std::int64_t>{"c", 5}));
  EXPECT_EQ(top[1].first, "a");
  EXPECT_EQ(top[2].first, "b");
  EXPECT_EQ(OpCounts::total(tally), 10);
}

}  // namespace
}  // namespace fs::testing

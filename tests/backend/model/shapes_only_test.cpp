// NOTE [Shapes-only construction]: a Flamingo built inside ShapesOnlyScope
// has every parameter of the normal build (names, shapes, dtypes,
// requires-grad after freezing) without holding their memory or drawing from
// the generator, and the thread dispatches normally afterwards; once its
// parameters are given values (set_data, as FlatParameter does) it computes
// what the normally built model computes.
#include "backend/model/shapes_only.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <optional>
#include <string>

#include "tests/backend/model/tiny_model.h"

namespace fs::model {
namespace {

int64_t residentBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// The tiny preset with an LM wide enough (about 100 MB of float32) that resident memory shows it.
FlamingoOptions wideOptions() {
  auto c = testing::tinyConfig("opt");
  c.lm.width = 512;
  c.lm.ffn_dim = 12288;
  c.lm.layers = 2;
  auto o = FlamingoOptions::fromConfig(c);
  o.lm().noDropout();
  return o;
}

TEST(ShapesOnly, BuildsEveryParameterWithoutItsMemoryOrTheGenerator) {
  torch::manual_seed(5);
  Flamingo full(wideOptions());
  full->freezeAsOpenFlamingo();
  int64_t bytes = 0;
  for (const auto& p : full->parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  ASSERT_GT(bytes, int64_t{90} << 20);

  torch::manual_seed(5);
  const int64_t before = residentBytes();
  std::optional<Flamingo> shapes;
  {
    ShapesOnlyScope scope;
    shapes.emplace(wideOptions());
  }
  const int64_t grown = residentBytes() - before;
  EXPECT_EQ(shapesOnlyProblem(**shapes), "");
  (*shapes)->freezeAsOpenFlamingo();
  // Not a byte of the weights became resident (allow the module objects and allocator bookkeeping).
  EXPECT_LT(grown, bytes / 10) << "resident memory grew by " << grown << " of " << bytes << " bytes";
  // The generator was not drawn from: the next number is the seed's first.
  const double next = torch::rand({1}).item<double>();
  torch::manual_seed(5);
  EXPECT_EQ(next, torch::rand({1}).item<double>());

  const auto a = full->named_parameters();
  const auto b = (*shapes)->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key(), b[i].key());
    EXPECT_EQ(a[i].value().sizes(), b[i].value().sizes()) << a[i].key();
    EXPECT_EQ(a[i].value().scalar_type(), b[i].value().scalar_type()) << a[i].key();
    EXPECT_EQ(a[i].value().requires_grad(), b[i].value().requires_grad()) << a[i].key();
    EXPECT_TRUE(b[i].value().device().is_cpu()) << a[i].key();
  }
}

TEST(ShapesOnly, GivenValuesItComputesAsTheNormalBuild) {
  torch::manual_seed(3);
  Flamingo full = testing::buildTiny("opt", 3);
  testing::setGates(full);
  std::optional<Flamingo> shapes;
  {
    ShapesOnlyScope scope;
    shapes.emplace(testing::tinyOptions("opt"));
  }
  {
    torch::NoGradGuard noGrad;
    const auto a = full->named_parameters();
    auto b = (*shapes)->named_parameters();
    for (size_t i = 0; i < a.size(); ++i) b[i].value().set_data(a[i].value().detach().clone());
  }
  const auto batch = testing::tinyBatch(testing::tinyOptions("opt"));
  const auto want = full->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
  const auto got = (*shapes)->forward(batch.vision_x, batch.input_ids, batch.attention_mask);
  EXPECT_TRUE(torch::equal(got, want));
}

}  // namespace
}  // namespace fs::model

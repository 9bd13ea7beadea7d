#include "backend/step/labels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backend/data/synthetic_source.h"
#include "tests/backend/data/tiny_config.h"
#include "tests/backend/step/python_oracle.h"
#include "tests/fixtures/fixture_unavailable.h"

namespace fs::step {
namespace {

constexpr int64_t X = kIgnoreIndex;
constexpr int64_t PAD = 1, EOS = 2, EOC = 128, IMG = 129;
const data::SpecialTokenIds kTokens{130, EOS, PAD, IMG, EOC};
using V = std::vector<int64_t>;

torch::Tensor row(const std::vector<int64_t>& v) {
  return torch::tensor(v, torch::kInt64).unsqueeze(0);
}

std::vector<int64_t> vec(const torch::Tensor& t) {
  const auto c = t.flatten().contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

std::vector<int64_t> laion(const std::vector<int64_t>& ids, const data::SpecialTokenIds& t = kTokens) {
  return vec(laionLabels(row(ids), t));
}
std::vector<int64_t> mmc4(const std::vector<int64_t>& ids) {
  return vec(mmc4Labels(row(ids), kTokens));
}

TEST(LaionLabels, CaptionEndofchunkAndEosAreTargets) {
  EXPECT_EQ(laion({IMG, 10, 11, 12, EOC, EOS, PAD, PAD}), (V{X, 10, 11, 12, EOC, EOS, X, X}));
}

TEST(LaionLabels, TruncatedCaptionKeepsItsTokens) {
  EXPECT_EQ(laion({IMG, 10, 11, 12}), (V{X, 10, 11, 12}));
}

TEST(LaionLabels, LeadingBosIsLeftAsIsAndNeverUsed) {
  // OPT prepends BOS = </s> (the eos id); label 0 is shifted away anyway.
  EXPECT_EQ(laion({EOS, IMG, 10, EOC, EOS}), (V{EOS, X, 10, EOC, EOS}));
}

TEST(LaionLabels, PadEqualToEosMasksEos) {
  data::SpecialTokenIds t = kTokens;
  t.pad = EOS;
  EXPECT_EQ(laion({IMG, 10, EOC, EOS, EOS}, t), (V{X, 10, EOC, X, X}));
}

TEST(Mmc4Labels, TwoImagesFinalEndofchunkIsATargetEosIsNot) {
  EXPECT_EQ(mmc4({IMG, 10, 11, EOC, IMG, 12, 13, EOC, EOS, PAD, PAD}),
            (V{X, 10, 11, EOC, X, 12, 13, EOC, X, X, X}));
}

TEST(Mmc4Labels, TextBeforeTheFirstImageIsMasked) {
  EXPECT_EQ(mmc4({20, 21, IMG, 10, EOC, EOS, PAD}), (V{X, X, X, 10, EOC, X, X}));
}

TEST(Mmc4Labels, ThreeImages) {
  EXPECT_EQ(mmc4({IMG, 10, EOC, IMG, 11, EOC, IMG, 12, EOC, EOS}),
            (V{X, 10, EOC, X, 11, EOC, X, 12, EOC, X}));
}

TEST(Mmc4Labels, TruncatedBeforeTheFinalEndofchunk) {
  EXPECT_EQ(mmc4({IMG, 10, EOC, IMG, 11, 12}), (V{X, 10, EOC, X, 11, 12}));
}

TEST(Mmc4Labels, TruncatedRightAfterAnEndofchunk) {
  EXPECT_EQ(mmc4({IMG, 10, 11, EOC}), (V{X, 10, 11, EOC}));
}

TEST(Mmc4Labels, TokensBetweenEndofchunkAndTheNextImageAreMasked) {
  EXPECT_EQ(mmc4({IMG, 10, EOC, 30, 31, IMG, 12, EOC, EOS}), (V{X, 10, EOC, X, X, X, 12, EOC, X}));
  EXPECT_EQ(mmc4({IMG, 10, EOC, EOS, 30, 31}), (V{X, 10, EOC, X, X, X}));
}

TEST(Mmc4Labels, ImageFollowedByEndofchunk) {
  EXPECT_EQ(mmc4({IMG, EOC, IMG, 10, EOC, EOS}), (V{X, EOC, X, 10, EOC, X}));
}

TEST(Mmc4Labels, NoTargetCases) {
  EXPECT_EQ(mmc4({20, 21, 22, IMG}), (V{X, X, X, X})) << "the reference rejects a single image at the end";
  EXPECT_EQ(mmc4({20, 21, EOC, EOS}), (V{X, X, X, X})) << "no image at all";
}

TEST(Mmc4Labels, RowsAreIndependent) {
  const auto ids = torch::tensor(V{IMG, 10, EOC, EOS, 20, IMG, 11, 12, EOC}).view({1, 9}).repeat({2, 1});
  ids[1] = torch::tensor(V{20, 21, 22, IMG, 10, EOC, EOS, PAD, PAD});
  EXPECT_EQ(vec(mmc4Labels(ids, kTokens)),
            (V{X, 10, EOC, X, X, X, 11, 12, EOC, X, X, X, X, 10, EOC, X, X, X}));
}

TEST(LabelStats, CountsTargetsAfterTheShiftAndEmptySamples) {
  auto labels = torch::tensor(V{X, 10, EOC, X, 5, X, X, X}).view({2, 4});
  // Row 1's only non-ignored label is at position 0, which no position predicts.
  const LabelStats s = labelStats(labels);
  EXPECT_EQ(s.samples, 2);
  EXPECT_EQ(s.targets, 2);
  EXPECT_EQ(s.samplesWithoutTargets, 1);
}

TEST(Labels, KeepTheDevice) {
  const auto ids = row({IMG, 10, EOC, EOS});
  EXPECT_EQ(makeLabels(data::DatasetKind::kMmc4, ids, kTokens).device(), ids.device());
  EXPECT_EQ(makeLabels(data::DatasetKind::kLaion, ids, kTokens).sizes(), ids.sizes());
}

// Every synthetic sample carries at least one supervised token.
TEST(Labels, SyntheticBatchesAlwaysHaveTargets) {
  for (const bool tiny : {true, false}) {
    auto c = tiny ? fs::test::tinyConfig() : protocol::defaultRunConfig();
    if (!tiny) {
      c.model.vision.image_size = 4;
      c.data.datasets[0].batch_size = 32;
      c.data.datasets[1].batch_size = 16;
      c.data.datasets[0].samples_per_epoch = 32 * 20;
      c.data.datasets[1].samples_per_epoch = 16 * 20;
    }
    const auto tokens = data::specialTokensFromConfig(c.model.tokens);
    auto src = std::move(data::SyntheticSource::create(c, 0, 1)).value();
    for (int epoch = 0; epoch < 2; ++epoch) {
      src->setEpoch(epoch);
      while (auto step = src->next().value()) {
        for (const auto& b : step->batches) {
          const LabelStats s = labelStats(makeLabels(b.kind, b.inputIds, tokens));
          EXPECT_EQ(s.samplesWithoutTargets, 0) << b.dataset << " epoch " << epoch << " step " << step->step;
          EXPECT_GT(s.targets, 0);
        }
      }
    }
  }
}

// The C++ rules against OpenFlamingo's own train_one_epoch (labels_oracle.py), on synthetic
// batches and on random ids with the special tokens sprinkled in.
TEST(Labels, MatchOpenFlamingosTrainOneEpoch) {
  if (!fs::test::pythonTorchAvailable())
    FS_FIXTURE_UNAVAILABLE(std::string(FS_PYTHON) + " cannot import torch: run scripts/install-deps.sh");
  std::vector<torch::Tensor> cases;
  const auto c = fs::test::tinyConfig();
  auto src = std::move(data::SyntheticSource::create(c, 0, 1)).value();
  for (int s = 0; s < 4; ++s) {
    const auto step = src->next().value();
    ASSERT_TRUE(step.has_value());
    for (const auto& b : step->batches) cases.push_back(b.inputIds);
  }
  torch::manual_seed(7);
  auto random = torch::randint(3, 60, {64, 40}, torch::kInt64);
  const auto pick = torch::rand({64, 40});
  random.masked_fill_(pick < 0.08, IMG);
  random.masked_fill_(pick.gt(0.08).logical_and(pick < 0.16), EOC);
  random.masked_fill_(pick.gt(0.16).logical_and(pick < 0.2), EOS);
  random.masked_fill_(pick.gt(0.2).logical_and(pick < 0.25), PAD);
  cases.push_back(random);

  const fs::test::ScratchDir scratch("labels");
  const std::string& dir = scratch.path;
  fs::test::saveForPython(
      c10::ivalue::Tuple::create({c10::List<torch::Tensor>(cases), torch::tensor(V{PAD, IMG, EOC})}),
      dir + "/in.pt");
  ASSERT_TRUE(fs::test::runOracle("labels_oracle.py", dir + "/in.pt", dir + "/out.pt"));
  const auto results = fs::test::loadFromPython(dir + "/out.pt").toList();
  ASSERT_EQ(results.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto result = results.get(i).toList();
    EXPECT_TRUE(torch::equal(laionLabels(cases[i], kTokens), result.get(0).toTensor())) << "case " << i;
    EXPECT_TRUE(torch::equal(mmc4Labels(cases[i], kTokens), result.get(1).toTensor())) << "case " << i;
  }
}

// NOTE [Logits at the targets]: the targets in the loss's order, each with the position that predicts it.
TEST(TargetsOf, FlatPositionsOfThePredictingLogitsInRowOrder) {
  const auto labels = torch::tensor(V{X, 7, 8, X, 9, X, X, 5, X, 6}, torch::kInt64).view({2, 5});
  const Targets t = targetsOf(labels);
  EXPECT_EQ(vec(t.positions), (V{0, 1, 3, 6, 8}));
  EXPECT_EQ(vec(t.labels), (V{7, 8, 9, 5, 6}));
  EXPECT_EQ(t.positions.size(0), countTargets(labels));
  // Label 0 is never a target; no target at all gives empty tensors.
  const Targets none = targetsOf(torch::tensor(V{4, X, X}, torch::kInt64).view({1, 3}));
  EXPECT_EQ(none.positions.numel(), 0);
  EXPECT_EQ(none.labels.numel(), 0);
}

// NOTE [Dead positions]: from each row's last target label on; a row without targets keeps everything.
TEST(DeadPositions, FromEachRowsLastTargetOn) {
  const auto labels = torch::cat({torch::tensor(V{X, 7, 8, X, X}, torch::kInt64).view({1, 5}),
                                  torch::tensor(V{X, X, X, X, X}, torch::kInt64).view({1, 5}),
                                  torch::tensor(V{X, 7, X, 8, 9}, torch::kInt64).view({1, 5}),
                                  torch::tensor(V{5, X, X, X, X}, torch::kInt64).view({1, 5})});
  const auto dead = deadPositions(labels).to(torch::kInt64);
  EXPECT_EQ(vec(dead), (V{0, 0, 1, 1, 1, /**/ 0, 0, 0, 0, 0, /**/ 0, 0, 0, 0, 1, /**/ 0, 0, 0, 0, 0}));
  // On real MMC4 labels: the final <|endofchunk|> and the eos after it.
  const auto ids = row({IMG, 10, 11, EOC, IMG, 12, EOC, EOS, PAD});
  EXPECT_EQ(vec(deadPositions(mmc4Labels(ids, kTokens)).to(torch::kInt64)), (V{0, 0, 0, 0, 0, 0, 1, 1, 1}));
}

TEST(TargetsOf, RefusesLabelsOffTheHostOrOfAnotherShape) {
  EXPECT_THROW(targetsOf(torch::zeros({3}, torch::kInt64)), c10::Error);
  EXPECT_THROW(deadPositions(torch::zeros({2, 3}, torch::kInt32)), c10::Error);
}

}  // namespace
}  // namespace fs::step

// The iteration's two agreements: on one rank (everything local) and on
// three ranks as threads of this process over real Gloo on loopback: token
// counts, the per-rank figures riding on the opening, the
// logged loss and backward scales, a NaN on one rank seen by all.
#include "backend/trainer/iteration_agreement.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "tests/backend/distributed/thread_ranks.h"

namespace fs::trainer {
namespace {

TEST(IterationAgreementTest, OneRankIsLocal) {
  for (bool compat : {false, true}) {
    IterationAgreement a(nullptr, compat);
    const std::vector<double> figures = {1.5, 2.5};
    a.open({12, 0}, &figures);
    a.awaitOpening();
    EXPECT_EQ(a.globalTargets(0), 12);
    EXPECT_EQ(a.globalTargets(1), 0);
    EXPECT_EQ(a.backwardScale(0), 1.0);
    EXPECT_EQ(a.gatheredFigures(), figures);
    a.close({2.25, std::nan("")});
    a.awaitClosing();
    EXPECT_DOUBLE_EQ(a.loss(0), 2.25);
    EXPECT_FALSE(a.nonFinite(0));
    EXPECT_TRUE(a.nonFinite(1));
    EXPECT_EQ(a.waitSeconds(), 0.0);
  }
}

struct RankResult {
  std::vector<int64_t> global;
  std::vector<double> scale, loss, figures;
  std::vector<bool> nonFinite;
  std::string error;
};

// Rank r: dataset 0 has r + 1 targets and loss r + 1; dataset 1 no target
// anywhere, with a NaN loss on rank 2. Rank 1 asks for a pause, rank 2 for
// Figures: {r, 10 r}.
std::vector<RankResult> runThreeRanks(bool compat) {
  std::vector<RankResult> out(3);
  const auto errors = fs::testing::runThreadRanks(3, [&](distributed::Communicator& comm) {
    const int r = comm.rank();
    IterationAgreement a(std::shared_ptr<distributed::Communicator>(&comm, [](distributed::Communicator*) {}),
                         compat);
    const std::vector<double> figures = {static_cast<double>(r), 10.0 * r};
    a.open({r + 1, 0}, &figures);
    a.awaitOpening();
    RankResult& res = out[static_cast<size_t>(r)];
    res.global = {a.globalTargets(0), a.globalTargets(1)};
    res.scale = {a.backwardScale(0), a.backwardScale(1)};
    res.figures = a.gatheredFigures();
    a.close({static_cast<double>(r + 1), r == 2 ? std::nan("") : 0.0});
    a.awaitClosing();
    res.loss = {a.loss(0), a.loss(1)};
    res.nonFinite = {a.nonFinite(0), a.nonFinite(1)};
  });
  for (size_t r = 0; r < out.size(); ++r) out[r].error = errors[r];
  return out;
}

TEST(IterationAgreementTest, ThreeRanksAgree) {
  const auto ranks = runThreeRanks(false);
  for (int r = 0; r < 3; ++r) {
    const RankResult& res = ranks[static_cast<size_t>(r)];
    ASSERT_EQ(res.error, "") << "rank " << r;
    EXPECT_EQ(res.global, (std::vector<int64_t>{6, 0})) << "rank " << r;
    // world x local / global: the mean of the three scaled gradients is the token-weighted one.
    EXPECT_DOUBLE_EQ(res.scale[0], 3.0 * (r + 1) / 6.0) << "rank " << r;
    EXPECT_EQ(res.scale[1], 0.0) << "rank " << r;
    EXPECT_EQ(res.figures, (std::vector<double>{0, 0, 1, 10, 2, 20})) << "rank " << r;
    EXPECT_DOUBLE_EQ(res.loss[0], (1.0 * 1 + 2.0 * 2 + 3.0 * 3) / 6.0) << "rank " << r;
    EXPECT_FALSE(res.nonFinite[0]) << "rank " << r;
    EXPECT_TRUE(res.nonFinite[1]) << "rank " << r;  // rank 2's NaN
  }
}

TEST(IterationAgreementTest, CompatLogsThePlainMeanAndDoesNotScale) {
  const auto ranks = runThreeRanks(true);
  for (int r = 0; r < 3; ++r) {
    const RankResult& res = ranks[static_cast<size_t>(r)];
    ASSERT_EQ(res.error, "") << "rank " << r;
    EXPECT_EQ(res.scale[0], 1.0) << "rank " << r;
    EXPECT_DOUBLE_EQ(res.loss[0], (1.0 + 2.0 + 3.0) / 3.0) << "rank " << r;
  }
}

}  // namespace
}  // namespace fs::trainer

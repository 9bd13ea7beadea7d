// linearSumAssignment against scipy.optimize.linear_sum_assignment, pair for
// pair, on tie-heavy and rectangular matrices (one Python run), plus errors.
#include "backend/data/documents/linear_assignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "backend/data/rng.h"
#include "tests/backend/data/documents/oracle_util.h"

namespace fs::data {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  size_t rows = 0, cols = 0;
  bool maximize = false;
  std::vector<double> cost;
};

// Shapes: square, wide, tall, 1 x N, N x 1; values: small integers (many
// ties), constants, negatives, similarity-like floats, full doubles, and
// sparse +inf (forbidden) entries.
Case randomCase(Rng& rng, int index) {
  Case c;
  const int maxSide = index % 10 == 0 ? 60 : 12;
  switch (index % 5) {
    case 0:
      c.rows = c.cols = rng.range(1, maxSide);
      break;
    case 1:
      c.rows = rng.range(1, maxSide);
      c.cols = rng.range(1, maxSide);
      break;
    case 2:
      c.rows = 1;
      c.cols = rng.range(1, maxSide);
      break;
    case 3:
      c.rows = rng.range(1, maxSide);
      c.cols = 1;
      break;
    default:
      c.cols = rng.range(1, maxSide);
      c.rows = c.cols + rng.range(1, 8);
      break;
  }
  c.maximize = rng.coin(0.3);
  const int kind = static_cast<int>(rng.below(7));
  const double constant = static_cast<double>(rng.range(-3, 3));
  const int64_t levels = rng.range(1, 4);
  for (size_t k = 0; k < c.rows * c.cols; ++k) {
    double x = 0;
    switch (kind) {
      case 0:
        x = static_cast<double>(rng.below(levels + 1));
        break;
      case 1:
        x = constant;
        break;
      case 2:
        x = static_cast<double>(rng.range(-5, 5));
        break;
      case 3:
        x = 0.1 + 0.3 * rng.unitFloat();
        break;  // CLIP-similarity-like
      case 4:
        x = 0.1 + 0.05 * static_cast<double>(rng.below(7));
        break;  // quantised: exact ties
      case 5:
        x = (rng.coin(0.5) ? -1 : 1) * std::ldexp(rng.unitFloat(), rng.range(-20, 20));
        break;
      default:
        x = rng.coin(0.15) ? kInf : static_cast<double>(rng.below(10));
        break;
    }
    c.cost.push_back(x);
  }
  if (kind == 6) c.maximize = false;  // +inf is only "forbidden" when minimising
  return c;
}

std::vector<Case> errorCases() {
  std::vector<Case> cases;
  cases.push_back({2, 2, false, {1, std::nan(""), 3, 4}});
  cases.push_back({2, 3, false, {1, 2, 3, 4, -kInf, 6}});
  cases.push_back({2, 2, true, {1, 2, kInf, 4}});               // +inf negated: invalid
  cases.push_back({1, 1, false, {kInf}});                       // infeasible
  cases.push_back({2, 2, false, {kInf, kInf, 1, 2}});           // a row with no finite entry
  cases.push_back({3, 2, false, {kInf, 1, kInf, 2, kInf, 3}});  // tall: one column must serve all
  cases.push_back({0, 3, false, {}});
  cases.push_back({3, 0, false, {}});
  cases.push_back({0, 0, false, {}});
  return cases;
}

nlohmann::json toJson(const Case& c) {
  nlohmann::json cost = nlohmann::json::array();
  for (double x : c.cost) {
    if (std::isnan(x))
      cost.push_back("nan");
    else if (std::isinf(x))
      cost.push_back(x > 0 ? "inf" : "-inf");
    else
      cost.push_back(x);
  }
  return {{"rows", c.rows}, {"cols", c.cols}, {"maximize", c.maximize}, {"cost", cost}};
}

TEST(LinearAssignmentTest, MatchesScipyPairForPair) {
  Rng rng(20240611);
  std::vector<Case> cases = errorCases();
  for (int i = 0; i < 500; ++i) cases.push_back(randomCase(rng, i));
  nlohmann::json input = nlohmann::json::array();
  for (const Case& c : cases) input.push_back(toJson(c));
  const nlohmann::json answers = test::askPythonOracle("lsap_oracle.py", input);
  ASSERT_EQ(answers.size(), cases.size());

  int solved = 0, refused = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const nlohmann::json& want = answers[k];
    SCOPED_TRACE("case " + std::to_string(k) + ": " + std::to_string(c.rows) + " x " +
                 std::to_string(c.cols) + (c.maximize ? " maximize" : ""));
    auto got = linearSumAssignment(c.cost, c.rows, c.cols, c.maximize);
    if (want.contains("error")) {
      ASSERT_FALSE(got.isOk()) << "SciPy: " << want["error"];
      const bool infeasible = want["error"].get<std::string>().find("infeasible") != std::string::npos;
      EXPECT_NE(got.status().message().find(infeasible ? "infeasible" : "invalid numeric entries"),
                std::string::npos)
          << got.status().message();
      ++refused;
      continue;
    }
    ASSERT_TRUE(got.isOk()) << got.status().message();
    const auto& rows = want["rows"];
    const auto& cols = want["cols"];
    ASSERT_EQ(got.value().size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(got.value()[i].row, rows[i].get<int64_t>()) << "pair " << i;
      EXPECT_EQ(got.value()[i].col, cols[i].get<int64_t>()) << "pair " << i;
    }
    ++solved;
  }
  EXPECT_GT(solved, 400);
  EXPECT_GE(refused, 6);
}

TEST(LinearAssignmentTest, AllEqualGivesIdentityAndTallIsSortedByRow) {
  auto square = linearSumAssignment(std::vector<double>(9, 0.5), 3, 3);
  ASSERT_TRUE(square.isOk());
  EXPECT_EQ(square.value(), (std::vector<AssignedPair>{{0, 0}, {1, 1}, {2, 2}}));
  // Tall: columns 0 and 1 are taken by the rows that make the smallest total.
  auto tall = linearSumAssignment(std::vector<double>{5, 5, 1, 9, 9, 1}, 3, 2);
  ASSERT_TRUE(tall.isOk());
  EXPECT_EQ(tall.value(), (std::vector<AssignedPair>{{1, 0}, {2, 1}}));
}

TEST(LinearAssignmentTest, RejectsWrongSizeAndNamesTheEntry) {
  auto wrong = linearSumAssignment(std::vector<double>{1, 2, 3}, 2, 2);
  ASSERT_FALSE(wrong.isOk());
  EXPECT_NE(wrong.status().message().find("expected rows x cols = 2 x 2"), std::string::npos);
  auto nan = linearSumAssignment(std::vector<double>{1, 2, std::nan(""), 4}, 2, 2);
  ASSERT_FALSE(nan.isOk());
  EXPECT_NE(nan.status().message().find("row 1, column 0"), std::string::npos) << nan.status().message();
}

}  // namespace
}  // namespace fs::data

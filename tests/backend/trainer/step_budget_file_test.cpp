// The step budget file (step_budget_file.h): round trip, the errors on bad
// files (each names the file, line and value), and the verdicts.
#include "tests/backend/trainer/step_budget_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace fs::testing {
namespace {

class StepBudgetFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fs-step-budget-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& text) {
    const auto path = dir_ / "budget.txt";
    std::ofstream(path) << text;
    return path;
  }
  std::string errorOf(const std::string& text) {
    const auto read = readStepBudget(write(text));
    EXPECT_FALSE(read.isOk());
    return read.status().message();
  }
  std::filesystem::path dir_;
};

TEST_F(StepBudgetFileTest, WrittenBudgetReadsBackWithItsHeaderAsComments) {
  const auto path = dir_ / "budget.txt";
  const StepBudget budget{"1.13.0",
                          {{"forward_ops", 812}, {"allocations", 0}},
                          {{"forward_ops", {{"aten::add", 800}, {"my op with spaces", 12}}}}};
  ASSERT_TRUE(writeStepBudget(path, "what it is\n\nhow to update", budget).isOk());
  const auto read = readStepBudget(path);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(read->libtorch, "1.13.0");
  EXPECT_EQ(read->counts, budget.counts);
  EXPECT_EQ(read->names, budget.names);
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "# what it is");
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
}

TEST_F(StepBudgetFileTest, BadLinesNameTheFileLineAndValue) {
  EXPECT_NE(errorOf("libtorch 1.13.0\nforward_ops 12x\n").find("budget.txt:2: forward_ops = '12x' is not"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\nforward_ops -3\n").find("'-3' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\nforward_ops\n").find(":2: 'forward_ops' has no value"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\nforward_ops 1 2\n").find("unexpected '2'"), std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\nForward 1\n").find("key 'Forward' is not [a-z0-9_]+"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\na 1\n# x\na 2\n").find(":4: 'a' again (first on line 2)"),
            std::string::npos);
  EXPECT_NE(errorOf("# only comments\na 1\n").find("no `libtorch VERSION` line"), std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\na 1\nname a 1\n").find(":3: a `name` line wants `name KEY COUNT OP`"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\na 1\nname a x aten::add\n").find("name a count 'x' is not"),
            std::string::npos);
  EXPECT_NE(errorOf("libtorch 1.13.0\na 1\nname a 1 aten::add\nname a 2 aten::add\n")
                .find(":4: name a 'aten::add' again"),
            std::string::npos);
  EXPECT_NE(
      errorOf("libtorch 1.13.0\na 1\nname b 1 aten::add\n").find("`name` lines for 'b', which has no count"),
      std::string::npos);
  const auto missing = readStepBudget(dir_ / "absent.txt");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("absent.txt: cannot open"), std::string::npos);
}

TEST_F(StepBudgetFileTest, VerdictsCompareEachCountWithItsBudget) {
  const StepBudget budget{"1.13.0",
                          {{"same", 100}, {"grew", 100}, {"near", 100}, {"shrank", 100}, {"old", 7}}};
  const NamedCounts measured{{"same", 100}, {"grew", 101}, {"near", 95}, {"shrank", 94}, {"new", 3}};
  const auto checks = checkAgainstBudget(budget, measured, 5);
  ASSERT_EQ(checks.size(), 6U);
  EXPECT_EQ(checks[0].verdict, BudgetVerdict::kWithin);
  EXPECT_EQ(checks[1].verdict, BudgetVerdict::kOver);
  EXPECT_EQ(checks[2].verdict, BudgetVerdict::kWithin);  // exactly 5% below: not yet worth lowering
  EXPECT_EQ(checks[3].verdict, BudgetVerdict::kLowerable);
  EXPECT_EQ(checks[4].verdict, BudgetVerdict::kNoBudget);
  EXPECT_EQ(checks[4].key, "new");
  EXPECT_EQ(checks[5].verdict, BudgetVerdict::kStale);
  EXPECT_EQ(checks[5].key, "old");
  EXPECT_FALSE(checks[5].count.has_value());
}

TEST_F(StepBudgetFileTest, NameChangesListWhatGrewAndWhatFell) {
  const NameCounts recorded{{"aten::add", 10}, {"aten::mul", 4}, {"aten::gone", 2}, {"aten::same", 1}};
  const NameCounts now{{"aten::add", 11}, {"aten::mul", 1}, {"aten::clone", 4}, {"aten::same", 1}};
  const NameChanges c = compareNames(recorded, now);
  ASSERT_EQ(c.grew.size(), 2U);
  EXPECT_EQ(c.grew[0].name, "aten::clone");  // +4 before +1
  EXPECT_EQ(c.grew[0].recorded, 0);
  EXPECT_EQ(c.grew[1].name, "aten::add");
  ASSERT_EQ(c.fell.size(), 2U);
  EXPECT_EQ(c.fell[0].name, "aten::mul");  // -3 before -2
  EXPECT_EQ(c.fell[1].name, "aten::gone");
  EXPECT_EQ(c.fell[1].now, 0);
}

}  // namespace
}  // namespace fs::testing

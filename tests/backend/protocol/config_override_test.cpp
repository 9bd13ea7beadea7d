#include "backend/protocol/config/config_override.h"

#include <gtest/gtest.h>

#include "backend/protocol/config/schema.h"

namespace fs::protocol {
namespace {

TEST(ConfigOverride, ScalarFieldsOfEveryType) {
  RunConfig c = defaultRunConfig();
  ASSERT_TRUE(applyOverride(&c, "optim.lr=3e-4").isOk());
  ASSERT_TRUE(applyOverride(&c, "model.gradient_checkpointing=true").isOk());
  ASSERT_TRUE(applyOverride(&c, "optim.scheduler=cosine").isOk());
  ASSERT_TRUE(applyOverride(&c, "launch.hosts=[a@h1:22, h2]").isOk());
  ASSERT_TRUE(applyOverride(&c, "name=my run").isOk());
  EXPECT_DOUBLE_EQ(c.optim.lr, 3e-4);
  EXPECT_TRUE(c.model.gradient_checkpointing);
  EXPECT_EQ(c.optim.scheduler, "cosine");
  EXPECT_EQ(c.launch.hosts, (std::vector<std::string>{"a@h1:22", "h2"}));
  EXPECT_EQ(c.name, "my run");
}

TEST(ConfigOverride, DatasetByIndexBracketAndName) {
  RunConfig c = defaultRunConfig();
  ASSERT_TRUE(applyOverride(&c, "data.datasets[0].batch_size=64").isOk());
  ASSERT_TRUE(applyOverride(&c, "data.datasets.1.batch_size=32").isOk());
  ASSERT_TRUE(applyOverride(&c, "data.datasets.mmc4.textsim_threshold=0.24").isOk());
  EXPECT_EQ(c.data.datasets[0].batch_size, 64);
  EXPECT_EQ(c.data.datasets[1].batch_size, 32);
  EXPECT_DOUBLE_EQ(c.data.datasets[1].textsim_threshold, 0.24);
}

TEST(ConfigOverride, AppendAndKeepDatasets) {
  RunConfig c = defaultRunConfig();
  ASSERT_TRUE(applyOverride(&c, "data.datasets[2].name=cc3m").isOk());
  ASSERT_EQ(c.data.datasets.size(), 3u);
  EXPECT_EQ(c.data.datasets[2].name, "cc3m");
  EXPECT_EQ(c.data.datasets[2].batch_size, 128);
  ASSERT_TRUE(applyOverride(&c, "data.datasets=cc3m,laion").isOk());
  ASSERT_EQ(c.data.datasets.size(), 2u);
  EXPECT_EQ(c.data.datasets[0].name, "cc3m");
  EXPECT_EQ(c.data.datasets[1].name, "laion");
  Status s = applyOverride(&c, "data.datasets=mmc4");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("no dataset named 'mmc4'"), std::string::npos) << s.message();
}

TEST(ConfigOverride, ErrorsNamePathValueAndAllowed) {
  RunConfig c = defaultRunConfig();
  const RunConfig before = c;
  struct Case {
    const char* assignment;
    const char* expected;
  } cases[] = {
      {"optim.lr", "not of the form path=value"},
      {"optim.learning_rate=1", "unknown config key 'optim.learning_rate'"},
      {"optim.warmup=1", "did you mean 'warmup_steps'?"},
      {"optim.epochs=two", "optim.epochs: 'two' is not an integer"},
      {"optim.precision=fp8",
       "optim.precision: 'fp8' is not allowed; expected one of: fp32, bf16, fp16, amp_bf16"},
      {"data.datasets[0].batch_size=0",
       "data.datasets[0].batch_size: 0 is out of range; expected an integer in [1,"},
      {"data.datasets.cc12m.batch_size=1", "has no element named 'cc12m'"},
      {"model.lm=3", "is a section"},
      {"seed.x=1", "has no sub-key 'x'"},
  };
  for (const auto& k : cases) {
    Status s = applyOverride(&c, k.assignment);
    ASSERT_FALSE(s.isOk()) << k.assignment;
    EXPECT_NE(s.message().find(k.expected), std::string::npos) << k.assignment << " -> " << s.message();
  }
  EXPECT_EQ(c, before) << "a failed override must not change the config";
}

TEST(ConfigOverride, ApplyOverridesReportsEachFailure) {
  RunConfig c = defaultRunConfig();
  auto problems = applyOverrides(&c, {"optim.lr=1e-3", "optim.bogus=1", "seed=7", "seed=x"});
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].message.find("--set optim.bogus=1"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.optim.lr, 1e-3);
  EXPECT_EQ(c.seed, 7);
}

// launch.env: one variable at a time, its value exactly as given; or the whole mapping.
TEST(ConfigOverride, LaunchEnvEntriesAndWholeMapping) {
  RunConfig c = defaultRunConfig();
  ASSERT_TRUE(applyOverride(&c, "launch.env.OPENBLAS_CORETYPE=Haswell").isOk());
  ASSERT_TRUE(applyOverride(&c, "launch.env.ODD= a=b, 'c' $(d) ").isOk());
  ASSERT_TRUE(applyOverride(&c, "launch.env.EMPTY=").isOk());
  EXPECT_EQ(c.launch.env,
            (StringMap{{"EMPTY", ""}, {"ODD", " a=b, 'c' $(d) "}, {"OPENBLAS_CORETYPE", "Haswell"}}));
  ASSERT_TRUE(applyOverride(&c, "launch.env.OPENBLAS_CORETYPE=Zen").isOk());
  EXPECT_EQ(c.launch.env.at("OPENBLAS_CORETYPE"), "Zen");
  ASSERT_TRUE(applyOverride(&c, R"(launch.env={A: "1", B: 'it''s', C = bare words})").isOk());
  EXPECT_EQ(c.launch.env, (StringMap{{"A", "1"}, {"B", "it's"}, {"C", "bare words"}}));
  ASSERT_TRUE(applyOverride(&c, "launch.env=").isOk());
  EXPECT_TRUE(c.launch.env.empty());
  // Names are checked by validation (validate_test), not here; a bad mapping text is an error.
  const RunConfig before = c;
  Status s = applyOverride(&c, "launch.env={A: \"unterminated}");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("launch.env: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("is not a mapping of names to strings"), std::string::npos) << s.message();
  EXPECT_FALSE(applyOverride(&c, "launch.env={A: 1, A: 2}").isOk());
  EXPECT_FALSE(applyOverride(&c, "launch.kind.x=1").isOk());
  EXPECT_EQ(c, before);
}

}  // namespace
}  // namespace fs::protocol

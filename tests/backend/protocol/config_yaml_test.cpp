#include "backend/protocol/config/config_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "random_config.h"
#include "test_util.h"

namespace fs::protocol {
namespace {

std::string errorsOf(const ConfigLoad& load) {
  return formatProblems(load.problems);
}

TEST(ConfigYaml, DefaultsRoundTrip) {
  const RunConfig c = defaultRunConfig();
  for (bool comments : {false, true}) {
    ConfigLoad back = loadConfigYaml(dumpConfigYaml(c, {.comments = comments}), "dump");
    ASSERT_TRUE(back.ok()) << errorsOf(back);
    EXPECT_EQ(back.config, c);
  }
}

TEST(ConfigYaml, EveryPresetLoadsAndRoundTrips) {
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::sourcePath("resources/presets"))) {
    if (entry.path().extension() != ".yaml") continue;
    ++presets;
    ConfigLoad load = loadConfigFile(entry.path().string());
    ASSERT_TRUE(load.ok()) << entry.path() << "\n" << errorsOf(load);
    ConfigLoad back = loadConfigYaml(dumpConfigYaml(load.config), "dump");
    ASSERT_TRUE(back.ok()) << errorsOf(back);
    EXPECT_EQ(back.config, load.config) << entry.path();
  }
  EXPECT_GE(presets, 5);
}

TEST(ConfigYaml, RandomConfigsRoundTripLosslessly) {
  test::RandomConfig gen(1234);
  for (int i = 0; i < 300; ++i) {
    const RunConfig c = gen.next();
    const std::string yaml = dumpConfigYaml(c, {.comments = i % 2 == 0});
    ConfigLoad back = loadConfigYaml(yaml, "random");
    ASSERT_TRUE(back.ok()) << errorsOf(back) << yaml;
    ASSERT_EQ(back.config, c) << "iteration " << i << "\n" << yaml;
  }
}

TEST(ConfigYaml, PartialDocumentChangesOnlyWhatItNames) {
  ConfigLoad load = loadConfigYaml("optim:\n  lr: 3e-4\n", "partial.yaml");
  ASSERT_TRUE(load.ok()) << errorsOf(load);
  RunConfig expected = defaultRunConfig();
  expected.optim.lr = 3e-4;
  EXPECT_EQ(load.config, expected);
}

TEST(ConfigYaml, EmptyDocumentIsDefaults) {
  ConfigLoad load = loadConfigYaml("", "empty.yaml");
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config, defaultRunConfig());
}

TEST(ConfigYaml, UnknownKeysAreErrorsWithSuggestion) {
  ConfigLoad load = loadConfigYaml("optim:\n  learning_rate: 1\n  warmup_step: 3\nmodle: {}\n", "c.yaml");
  ASSERT_FALSE(load.ok());
  ASSERT_EQ(load.problems.size(), 3u) << errorsOf(load);
  EXPECT_EQ(load.problems[0].path, "optim.learning_rate");
  EXPECT_NE(load.problems[0].message.find("c.yaml:2: unknown key 'learning_rate'"), std::string::npos)
      << load.problems[0].message;
  EXPECT_NE(load.problems[1].message.find("did you mean 'warmup_steps'?"), std::string::npos);
  EXPECT_NE(load.problems[2].message.find("did you mean 'model'?"), std::string::npos);
}

TEST(ConfigYaml, TypeErrorsNameLineFieldAndExpectation) {
  ConfigLoad load = loadConfigYaml(
      "seed: many\noptim:\n  epochs: 1.5\n  precision: [a]\ndata:\n  datasets:\n    - name: x\n      "
      "batch_size: big\n",
      "t.yaml");
  ASSERT_EQ(load.problems.size(), 4u) << errorsOf(load);
  EXPECT_EQ(load.problems[0].path, "seed");
  EXPECT_NE(load.problems[0].message.find("t.yaml:1: 'many' is not an integer"), std::string::npos)
      << load.problems[0].message;
  EXPECT_EQ(load.problems[1].path, "optim.epochs");
  EXPECT_NE(load.problems[2].message.find("found a list"), std::string::npos);
  EXPECT_EQ(load.problems[3].path, "data.datasets[0].batch_size");
  EXPECT_NE(load.problems[3].message.find("t.yaml:8"), std::string::npos);
}

TEST(ConfigYaml, SyntaxErrorHasPosition) {
  ConfigLoad load = loadConfigYaml("optim:\n  lr: [1, 2\n", "s.yaml");
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_NE(load.problems[0].message.find("s.yaml:"), std::string::npos);
  EXPECT_NE(load.problems[0].message.find("not valid YAML"), std::string::npos);
}

// NOTE [Config text is UTF-8]; the fuzzer's input is kept as
// fuzz/regressions/config_yaml/not_utf8_source.yaml.
TEST(ConfigYaml, TextThatIsNotUtf8IsRefusedWithItsPosition) {
  ConfigLoad load = loadConfigYaml(
      "name: x\ndata:\n  source: \x98"
      "enerated\n",
      "s.yaml");
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].message,
            "s.yaml:3:11: not valid UTF-8 (byte 0x98); a config file must be UTF-8");
  for (const char* bad : {"a: \xC0\x80", "a: \xED\xA0\x80", "a: \xF4\x90\x80\x80", "a: \xE2\x82", "\xFF"}) {
    EXPECT_FALSE(loadConfigYaml(bad, "s.yaml").ok()) << bad;
  }
  ConfigLoad ok = loadConfigYaml("name: \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"\n", "s.yaml");
  ASSERT_TRUE(ok.ok()) << errorsOf(ok);
  EXPECT_EQ(ok.config.name, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

TEST(ConfigYaml, NewerMajorSchemaIsRejectedClearly) {
  ConfigLoad load = loadConfigYaml("schema_version: \"2.0\"\nfuture_section: {}\n", "new.yaml");
  ASSERT_EQ(load.problems.size(), 1u) << errorsOf(load);
  EXPECT_NE(load.problems[0].message.find("config schema 2.0 is newer than this build reads (1.x)"),
            std::string::npos);
  EXPECT_NE(load.problems[0].fix.find("update Flamingo Studio"), std::string::npos);
  EXPECT_TRUE(loadConfigYaml("schema_version: \"1.7\"\n", "minor.yaml").ok());
}

TEST(ConfigYaml, DatasetListReplacesDefaultsAndFillsElementDefaults) {
  ConfigLoad load =
      loadConfigYaml("data:\n  datasets:\n    - {name: cc3m, type: laion, batch_size: 8}\n", "d.yaml");
  ASSERT_TRUE(load.ok()) << errorsOf(load);
  ASSERT_EQ(load.config.data.datasets.size(), 1u);
  DatasetConfig expected = defaultDataset("cc3m", "laion");
  expected.batch_size = 8;
  EXPECT_EQ(load.config.data.datasets[0], expected);
}

TEST(ConfigYaml, NullStringIsEmpty) {
  ConfigLoad load = loadConfigYaml("model:\n  lm:\n    path:\n", "n.yaml");
  ASSERT_TRUE(load.ok()) << errorsOf(load);
  EXPECT_EQ(load.config.model.lm.path, "");
}

TEST(ConfigYaml, MissingFileIsOneClearProblem) {
  ConfigLoad load = loadConfigFile("/nonexistent/run.yaml");
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].message, "/nonexistent/run.yaml: cannot open config file");
}

TEST(ConfigYaml, OversizedFileIsRefusedBeforeReading) {
  const auto dir = std::filesystem::temp_directory_path() / ("fs_cfg_big_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "big.yaml").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "name: x\n" << std::string(kMaxConfigBytes, '#');
  }
  const ConfigLoad load = loadConfigFile(path);
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_EQ(load.problems[0].message, path + ": " + std::to_string(kMaxConfigBytes + 8) +
                                          " bytes is over the limit of " + std::to_string(kMaxConfigBytes) +
                                          " bytes for a config file");
  EXPECT_FALSE(load.ok());
  std::filesystem::remove_all(dir);
}

TEST(ConfigYaml, OversizedTextIsRefused) {
  const ConfigLoad load = loadConfigYaml(std::string(kMaxConfigBytes + 1, ' '), "<stdin>");
  ASSERT_EQ(load.problems.size(), 1u);
  EXPECT_NE(load.problems[0].message.find("<stdin>: " + std::to_string(kMaxConfigBytes + 1) + " bytes"),
            std::string::npos)
      << load.problems[0].message;
  // Exactly at the limit is still read (all comments: the defaults).
  const ConfigLoad at = loadConfigYaml("#" + std::string(kMaxConfigBytes - 1, ' '), "<stdin>");
  EXPECT_TRUE(at.ok()) << errorsOf(at);
}

TEST(ConfigYaml, SaveIsAtomicAndReadable) {
  const auto dir = std::filesystem::temp_directory_path() / ("fs_cfg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RunConfig c = defaultRunConfig();
  c.name = "saved run";
  ASSERT_TRUE(saveConfigFile(c, (dir / "config.yaml").string()).isOk());
  ConfigLoad back = loadConfigFile((dir / "config.yaml").string());
  ASSERT_TRUE(back.ok()) << errorsOf(back);
  EXPECT_EQ(back.config, c);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  std::filesystem::remove_all(dir);
}

// launch.env: a mapping whose values are kept as written; every config round-trips.
TEST(ConfigYaml, LaunchEnvReadsValuesAsWrittenAndRoundTrips) {
  ConfigLoad load = loadConfigYaml(
      "launch:\n"
      "  env:\n"
      "    OPENBLAS_CORETYPE: Haswell\n"
      "    L2: 1048576\n"
      "    FLAG: yes\n"
      "    EMPTY:\n"
      "    HOSTILE: \"it's \\\"x\\\" $(touch c) `id`, {a: b} # not a comment\"\n"
      "    'y': n\n",
      "env.yaml");
  ASSERT_TRUE(load.ok()) << errorsOf(load);
  const StringMap expected = {{"OPENBLAS_CORETYPE", "Haswell"},
                              {"L2", "1048576"},
                              {"FLAG", "yes"},
                              {"EMPTY", ""},
                              {"HOSTILE", "it's \"x\" $(touch c) `id`, {a: b} # not a comment"},
                              {"y", "n"}};
  EXPECT_EQ(load.config.launch.env, expected);
  for (bool comments : {false, true}) {
    const std::string yaml = dumpConfigYaml(load.config, {.comments = comments});
    ConfigLoad back = loadConfigYaml(yaml, "dump");
    ASSERT_TRUE(back.ok()) << errorsOf(back) << yaml;
    EXPECT_EQ(back.config, load.config) << yaml;
  }
  // The flow form, and the default: an empty mapping, written as {}.
  ConfigLoad flow = loadConfigYaml("launch: {env: {A: x, B: \"y z\"}}\n", "flow.yaml");
  ASSERT_TRUE(flow.ok()) << errorsOf(flow);
  EXPECT_EQ(flow.config.launch.env, (StringMap{{"A", "x"}, {"B", "y z"}}));
  EXPECT_TRUE(defaultRunConfig().launch.env.empty());
  EXPECT_NE(dumpConfigYaml(defaultRunConfig()).find("\n  env: {}\n"), std::string::npos);
  EXPECT_TRUE(loadConfigYaml("launch:\n  env:\n", "null.yaml").config.launch.env.empty());
}

TEST(ConfigYaml, LaunchEnvTypeErrorsNameTheField) {
  ConfigLoad list = loadConfigYaml("launch:\n  env: [A, B]\n", "e.yaml");
  ASSERT_EQ(list.problems.size(), 1u) << errorsOf(list);
  EXPECT_EQ(list.problems[0].path, "launch.env");
  EXPECT_NE(list.problems[0].message.find("e.yaml:2: expected a mapping of names to strings"),
            std::string::npos)
      << list.problems[0].message;
  ConfigLoad nested = loadConfigYaml("launch:\n  env:\n    A: [1, 2]\n", "e.yaml");
  ASSERT_EQ(nested.problems.size(), 1u) << errorsOf(nested);
  EXPECT_EQ(nested.problems[0].path, "launch.env.A");
  EXPECT_NE(nested.problems[0].message.find("e.yaml:3: expected a string value, found a list"),
            std::string::npos)
      << nested.problems[0].message;
}

}  // namespace
}  // namespace fs::protocol

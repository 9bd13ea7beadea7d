// The real flamingo-train binary: exit codes 0/1/2, stderr names file and field.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/protocol/config/config_yaml.h"

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fs_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs flamingo-train with a shell-quoted argument string (arguments here are test literals).
  Result run(const std::string& args, const std::string& stdinText = "") {
    const std::string bin = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";
    const std::string in = (dir_ / "stdin").string(), out = (dir_ / "stdout").string(),
                      err = (dir_ / "stderr").string();
    std::ofstream(in) << stdinText;
    const std::string cmd = "cd '" + dir_.string() + "' && '" + bin + "' " + args + " <'" + in + "' >'" +
                            out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  std::filesystem::path dir_;
};

std::string preset(const std::string& name) {
  return std::string(FS_SOURCE_DIR) + "/resources/presets/" + name + ".yaml";
}

TEST_F(Cli, HelpAndUsageCodes) {
  EXPECT_EQ(run("--help").code, 0);
  Result none = run("");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("usage: flamingo-train <command>"), std::string::npos);
  Result typo = run("valdate x.yaml");
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.err.find("unknown command 'valdate' (did you mean 'validate'?)"), std::string::npos);
  std::vector<std::string> commands = {"validate", "show-defaults", "import-cmdline", "export-cmdline",
                                       "version",  "launch",        "probe"};
#ifdef FS_TEST_ENGINE
  commands.insert(commands.end(), {"train", "demo", "checkpoint"});
#endif
  for (const auto& cmd : commands) {
    Result r = run(cmd + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: flamingo-train"), std::string::npos) << cmd;
  }
  EXPECT_EQ(run("validate --bogus").code, 2);
}

#ifdef FS_TEST_ENGINE
// The happy path runs on real sharded checkpoints in
// tests/backend/checkpoint/fsdp_sharded_checkpoint_test.cpp.
TEST_F(Cli, ConsolidateNamesWhatIsWrong) {
  EXPECT_EQ(run("checkpoint consolidate only-one-arg").code, 2);
  EXPECT_EQ(run("checkpoint consolidat a b").code, 2);
  Result file = run("checkpoint consolidate '" + write("full.pt", "x") + "' out.pt");
  EXPECT_EQ(file.code, 1);
  EXPECT_NE(file.err.find("full.pt: not a directory"), std::string::npos) << file.err;
  std::filesystem::create_directories(dir_ / "checkpoint_step5.pt");
  Result incomplete = run("checkpoint consolidate checkpoint_step5.pt out.pt");
  EXPECT_EQ(incomplete.code, 1);
  EXPECT_NE(incomplete.err.find("checkpoint_step5.pt/index.json: missing"), std::string::npos)
      << incomplete.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.pt"));
}

// Issue 26 item 5: a config's pipe: commands run only with --allow-pipe.
TEST_F(Cli, TrainRefusesPipeCommandsWithoutAllowPipe) {
  const std::string canary = (dir_ / "CANARY").string();
  const std::string sets =
      " --set data.source=shards --set 'data.datasets[1].shards=/d/a.tar::{b.tar,pipe:touch " + canary +
      "}' --run-dir run";
  Result refused = run("train --config '" + preset("tiny") + "'" + sets);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("refused without --allow-pipe"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("data.datasets[1].shards: {b.tar,pipe:touch " + canary + "}"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("      touch " + canary + "\n"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(canary));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run"));
  // Allowed, the run gets past the gate to validation: dataset 0 names no shards, which stops it
  // before any data is read.
  Result allowed = run("train --allow-pipe --config '" + preset("tiny") + "'" + sets);
  EXPECT_EQ(allowed.code, 1) << allowed.err;
  EXPECT_EQ(allowed.err.find("--allow-pipe"), std::string::npos) << allowed.err;
  EXPECT_NE(allowed.err.find("config: error: data.datasets[0].shards: empty"), std::string::npos)
      << allowed.err;
  EXPECT_FALSE(std::filesystem::exists(canary));
  // No pipe, no flag needed: the same validation error is the only complaint.
  Result plain = run("train --config '" + preset("tiny") + "' --set data.source=shards --run-dir run");
  EXPECT_EQ(plain.code, 1) << plain.err;
  EXPECT_EQ(plain.err.find("--allow-pipe"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("config: error: data.datasets[0].shards: empty"), std::string::npos) << plain.err;
}
#endif

#if defined(FS_TEST_ENGINE) && defined(FS_TEST_NO_DATA_CODECS)
// An engine built with FS_BUILD_DATA_CODECS=OFF refuses shard data by name before any work (no run
// directory), and its shard tools say why they are absent.
TEST_F(Cli, WithoutDataCodecsShardDataAndShardToolsAreRefused) {
  Result generated = run("train --config '" + preset("tiny") + "' --run-dir run");
  EXPECT_EQ(generated.code, 1) << generated.err;
  EXPECT_NE(generated.err.find("flamingo-train: data.source: 'generated' reads data.datasets[0] 'laion', "
                               "data.datasets[1] 'mmc4' through the shard pipeline, but this build has no "
                               "data codecs (FS_BUILD_DATA_CODECS=OFF)"),
            std::string::npos)
      << generated.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run"));
  Result demo = run("demo --run-dir '" + (dir_ / "demo").string() + "'");
  EXPECT_EQ(demo.code, 1) << demo.err;
  EXPECT_NE(demo.err.find("(FS_BUILD_DATA_CODECS=OFF)"), std::string::npos) << demo.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "demo"));
  Result tool = run("shards make-synthetic --out shards");
  EXPECT_EQ(tool.code, 1) << tool.err;
  EXPECT_NE(tool.err.find("flamingo-train shards: this build has no data codecs (FS_BUILD_DATA_CODECS=OFF)"),
            std::string::npos)
      << tool.err;
  EXPECT_EQ(run("shards --help").code, 0);
}
#endif

TEST_F(Cli, ValidateTinyPrintsFigures) {
  Result r = run("validate '" + preset("tiny") + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid"), std::string::npos);
  EXPECT_NE(r.out.find("steps per epoch:            16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dataset mmc4 (mmc4):"), std::string::npos);
}

TEST_F(Cli, ValidateErrorsNameFileAndField) {
  const std::string cfg =
      write("bad.yaml", "optim:\n  lr: -1\ndata:\n  datasets:\n    - {name: a, batch_size: 0}\n");
  Result r = run("validate bad.yaml");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad.yaml: error: optim.lr: -1.0 is out of range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.yaml: error: data.datasets[0].batch_size"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the run cannot start"), std::string::npos);
  Result unknown = run("validate bad.yaml --set optim.lrr=1");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("did you mean 'lr'?"), std::string::npos) << unknown.err;
  Result missing = run("validate nothere.yaml");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("nothere.yaml: cannot open config file"), std::string::npos);
}

TEST_F(Cli, ValidateJsonAndStdin) {
  Result r = run("validate - --json", slurp(preset("tiny")));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"steps_per_epoch\": 16"), std::string::npos) << r.out;
}

TEST_F(Cli, ShowDefaultsRoundTrips) {
  Result r = run("show-defaults");
  ASSERT_EQ(r.code, 0);
  auto load = fs::protocol::loadConfigYaml(r.out, "show-defaults");
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config, fs::protocol::defaultRunConfig());
}

TEST_F(Cli, ImportAndExportCommandLines) {
  Result imp =
      run("import-cmdline -o imported.yaml -- torchrun --nnodes=1 --nproc_per_node=2 train.py --lm_path "
          "anas-awadalla/mpt-1b-redpajama-200b --batch_size_mmc4 16 --batch_size_laion 32 --report_to_wandb "
          "--frobnicate 3");
  EXPECT_EQ(imp.code, 0) << imp.err;
  EXPECT_NE(imp.err.find("--frobnicate"), std::string::npos) << imp.err;
  EXPECT_NE(imp.err.find("--report_to_wandb"), std::string::npos) << imp.err;
  auto load = fs::protocol::loadConfigFile((dir_ / "imported.yaml").string());
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load.config.model.lm.family, "mpt");
  EXPECT_EQ(load.config.launch.nproc_per_node, 2);
  Result exp = run("export-cmdline imported.yaml");
  EXPECT_EQ(exp.code, 0) << exp.err;
  EXPECT_NE(exp.out.find("--batch_size_mmc4 16"), std::string::npos) << exp.out;
  Result strict = run("import-cmdline --strict -- train.py --frobnicate");
  EXPECT_EQ(strict.code, 1);
}

TEST_F(Cli, Version) {
  Result r = run("version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("config schema 1.0"), std::string::npos) << r.out;
}

}  // namespace

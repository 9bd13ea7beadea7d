// `flamingo-train plan` end to end: the built binary, its exit codes, the
// JSON it prints (docs/planner.md), the 9B preset in seconds, and errors
// that name the flag or field.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string preset(const std::string& name) {
  return std::string(FS_SOURCE_DIR) + "/resources/presets/" + name + ".yaml";
}

// Runs flamingo-train with a shell-quoted argument string (test literals only).
Result run(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path() / ("fs_plan_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bin = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";
  const std::string cmd = "'" + bin + "' " + args + " </dev/null >'" + (dir / "out").string() + "' 2>'" +
                          (dir / "err").string() + "'";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  std::filesystem::remove_all(dir);
  return r;
}

TEST(PlanCli, NineBPresetPlansInSecondsWithBothEngines) {
  const auto start = std::chrono::steady_clock::now();
  const auto r =
      run("plan --config '" + preset("openflamingo-9b-vitl-mpt7b") + "' --world 8 --nodes 1 --json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(seconds, 10.0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "fs.plan/1.1");
  EXPECT_EQ(j["world"], 8);
  EXPECT_EQ(j["model"]["family"], "mpt");
  EXPECT_EQ(j["model"]["tied"].size(), 1u);
  bool ours = false, reference = false;
  for (const auto& e : j["estimates"]) {
    if (e["strategy"] != "full_shard" || e["policy"] != "openflamingo") continue;
    const double state = e["per_rank"]["model_state"].get<double>() / (1024.0 * 1024 * 1024);
    if (e["engine"] == "ours") {
      ours = true;
      EXPECT_NEAR(state, 4.15, 0.05);
    } else {
      reference = true;
      EXPECT_NEAR(state, 8.72, 0.05);
    }
    // One shard_bytes entry per rank for every unit of its layout.
    const auto& units = j["layouts"][e["layout"].get<size_t>()]["units"];
    ASSERT_EQ(e["units"].size(), units.size());
    EXPECT_EQ(e["units"][0]["shard_bytes"].size(), 8u);
  }
  EXPECT_TRUE(ours);
  EXPECT_TRUE(reference);
}

TEST(PlanCli, TableNamesUnitsAndStrategies) {
  const auto r =
      run("plan --config '" + preset("tiny") + "' --world 4 --nodes 2 --strategies full_shard,hybrid_shard");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("lang_encoder.model.decoder.layers.1.decoder_layer"), std::string::npos);
  EXPECT_NE(r.out.find("hybrid_shard"), std::string::npos);
  EXPECT_EQ(r.out.find("no_shard"), std::string::npos);
  EXPECT_NE(r.out.find("reference"), std::string::npos);
}

// parallel.mode ddp planned as what it runs (NOTE [Replicated modes]): by name, in JSON and the table.
TEST(PlanCli, ReplicatedModesByName) {
  auto r =
      run("plan --config '" + preset("tiny") + "' --world 2 --strategies ddp --policies openflamingo --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["estimates"].size(), 1u);  // ours: the reference models FSDP1 only
  const auto& e = j["estimates"][0];
  EXPECT_EQ(e["strategy"], "ddp");
  EXPECT_EQ(e["shard_group_size"], 1);
  EXPECT_EQ(e["per_rank"]["parameters"], 83972 * 4);
  EXPECT_EQ(e["per_rank"]["gradients"], 2 * 29380 * 4);  // .grad and the buckets
  EXPECT_EQ(e["per_rank"]["gathered_peak"], 0);

  r = run("plan --config '" + preset("tiny") + "' --world 1 --strategies single --no-reference");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("openflamingo, single, shard group of 1"), std::string::npos) << r.out;

  r = run("plan --config '" + preset("tiny") + "' --world 2 --strategies single");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--strategies: single is one process, but --world is 2"), std::string::npos) << r.err;
}

TEST(PlanCli, BadInputNamesTheFlagOrValue) {
  auto r = run("plan --config '" + preset("tiny") + "' --world 6 --nodes 4");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--world 6 is not divisible by --nodes 4"), std::string::npos) << r.err;

  r = run("plan --config '" + preset("tiny") + "' --world 2 --strategies full_shard,zero3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--strategies: unknown sharding strategy 'zero3'"), std::string::npos) << r.err;

  r = run("plan --config '" + preset("tiny") + "' --world 2 --policies magic");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("'magic'"), std::string::npos) << r.err;

  r = run("plan --config '" + preset("tiny") + "' --world two");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--world: 'two'"), std::string::npos) << r.err;

  r = run("plan --world 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--config"), std::string::npos) << r.err;

  r = run("plan --config /nonexistent/run.yaml --world 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/run.yaml"), std::string::npos) << r.err;

  r = run("plan --config '" + preset("tiny") +
          "' --world 2 --set parallel.wrap_patterns=[nothing.here] --policies custom");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("parallel.wrap_patterns: pattern 'nothing.here'"), std::string::npos) << r.err;

  EXPECT_EQ(run("plan --help").code, 0);
}

// plan --fit (backend/fsdp_plan/fit.h): the JSON for scripts, errors naming the flag and value, a
// refusal when nothing fits, and --output writing the chosen values into a config.
TEST(PlanCli, FitRanksChoicesAndWritesTheChosenConfig) {
  const std::string tiny = "plan --config '" + preset("tiny") + "' --fit";
  auto r = run(tiny + " --gpu H100-SXM-80GB --gpus-per-node 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "fs.fit/1");
  EXPECT_EQ(j["cluster"]["gpus_per_node"], 2);
  ASSERT_FALSE(j["ranked"].empty());
  for (const auto& c : j["ranked"]) {
    EXPECT_FALSE(c["reason"].get<std::string>().empty());
    EXPECT_LE(c["device_bytes"].get<int64_t>(), j["cluster"]["memory_per_gpu"].get<int64_t>());
  }

  r = run(tiny + " --gpu H100-SXM-80GB --gpus-per-node 2 --top 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Fits ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#1: fastest that fits"), std::string::npos) << r.out;

  const auto dir = std::filesystem::temp_directory_path() / ("fs_plan_fit_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = (dir / "fitted.yaml").string();
  r = run(tiny + " --gpu A100-SXM-40GB --gpus-per-node 2 --choice 1 --output '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote choice 1"), std::string::npos) << r.err;
  const std::string written = slurp(out);
  EXPECT_NE(written.find("nproc_per_node: 2"), std::string::npos) << written;
  // The written config plans, and fits the same way.
  r = run("plan --config '" + out + "' --fit --gpu A100-SXM-40GB --gpus-per-node 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;

  // An SSH launch for one host, fitted to 2 nodes: refused, nothing written, the hosts asked for.
  const std::string ssh = tiny + " --set launch.kind=ssh --set 'launch.hosts=[node-a]'" +
                          " --set data.datasets.0.batch_size=16 --set data.datasets.1.batch_size=8" +
                          " --gpu A100-SXM-40GB --nodes 2 --gpus-per-node 2 --choice 1";
  const auto sshOut = (dir / "ssh.yaml").string();
  r = run(ssh + " --output '" + sshOut + "'");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("would leave the config invalid, nothing written"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("launch.hosts"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give the 2 hosts with --set 'launch.hosts=[HOST,...]'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(sshOut));
  // With the hosts given, it writes them and the fitted values.
  r = run(ssh + " --set 'launch.hosts=[node-a,node-b]' --set launch.master_addr=node-a --output '" + sshOut +
          "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string sshWritten = slurp(sshOut);
  EXPECT_NE(sshWritten.find("nnodes: 2"), std::string::npos) << sshWritten;
  EXPECT_NE(sshWritten.find("node-b"), std::string::npos) << sshWritten;
  std::filesystem::remove_all(dir);
}

TEST(PlanCli, FitBadInputNamesTheFlagAndValue) {
  const std::string tiny = "plan --config '" + preset("tiny") + "'";
  auto r = run(tiny + " --fit --gpu B300");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--gpu: unknown GPU 'B300'"), std::string::npos) << r.err;
  r = run(tiny + " --fit --gpu H100-SXM-80GB --nodes 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nodes: 0 must be at least 1"), std::string::npos) << r.err;
  r = run(tiny + " --fit --gpu H100-SXM-80GB --intra-node-gbs -3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("intra_node_gbs: -3"), std::string::npos) << r.err;
  r = run(tiny + " --fit --memory-gib 8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing --gpus-per-node"), std::string::npos) << r.err;
  r = run(tiny + " --gpu H100-SXM-80GB");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--gpu: only with --fit"), std::string::npos) << r.err;
  // Nothing fits: the least any choice needs, and exit 1.
  r = run(tiny + " --fit --gpu H100-SXM-80GB --gpus-per-node 2 --memory-gib 0.001");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nothing fits"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("memory per GPU: needs"), std::string::npos) << r.out;
}

}  // namespace

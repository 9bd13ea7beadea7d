// fs_fuzz_seed_writer OUT_DIR: writes the seeds of the wire targets that come
// from our own encoders (run.json, a sharded index, the plan JSON, control
// files) into OUT_DIR/<target>/, so the committed corpus holds what the engine
// really writes. make_corpus.py runs it; not part of CTest.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "backend/fsdp_plan/plan.h"
#include "backend/fsdp_plan/plan_report.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/run_manifest.h"
#include "backend/protocol/wire/sharded_index.h"
#include "tests/backend/protocol/wire_samples.h"

namespace {

namespace stdfs = std::filesystem;
using namespace fs::protocol;

void write(const stdfs::path& dir, const std::string& name, const std::string& text) {
  stdfs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fs_fuzz_seed_writer OUT_DIR TINY_PRESET_YAML\n";
    return 2;
  }
  const stdfs::path out = argv[1];
  write(out / "run_manifest", "running_ssh.json", encodeManifest(fs::protocol::test::sampleManifest()));
  write(out / "sharded_index", "hybrid_shard.json",
        encodeShardedIndex(fs::protocol::test::sampleShardedIndex()));
  ControlCommand stop{1, ControlVerb::kStop, 1717000000000, "alice", {{"checkpoint", false}}};
  ControlCommand pause{2, ControlVerb::kPause, 1717000000001, "bob", nlohmann::json::object()};
  write(out / "control_file", controlFileName(stop.seq, stop.verb), encodeControl(stop));
  write(out / "control_file", controlFileName(pause.seq, pause.verb), encodeControl(pause));

  const ConfigLoad tiny = loadConfigFile(argv[2]);
  if (!tiny.ok()) {
    std::cerr << argv[2] << ": does not load\n";
    return 1;
  }
  fs::fsdp_plan::PlanRequest request;
  request.config = tiny.config;
  request.topology = {2, 1};
  request.strategies = {fs::fsdp_plan::Strategy::kFullShard};
  auto plan = fs::fsdp_plan::makePlan(request);
  if (!plan) {
    std::cerr << "plan: " << plan.status().message() << "\n";
    return 1;
  }
  write(out / "plan_json", "tiny_full_shard.json", fs::fsdp_plan::planToJson(*plan).dump());
  return 0;
}

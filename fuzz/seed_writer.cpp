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

namespace {

namespace stdfs = std::filesystem;
using namespace fs::protocol;

void write(const stdfs::path& dir, const std::string& name, const std::string& text) {
  stdfs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << text;
}

RunManifest manifest() {
  RunManifest m;
  m.run_id = "run-20240601-abc";
  m.engine_version = "0.1.0+g1234";
  m.created = 1717000000000;
  m.world_size = 8;
  m.nnodes = 2;
  m.nproc_per_node = 4;
  m.hosts = {"node-a", "node-b"};
  m.launcher = LauncherKind::kSsh;
  m.state = RunState::kRunning;
  m.pid = 4242;
  m.agent_pid = 4200;
  m.updated = 1717000005000;
  return m;
}

ShardedIndexRecord shardedIndex() {
  ShardedIndexRecord x;
  x.worldSize = 4;
  x.strategy = "hybrid_shard";
  x.shardGroupSize = 2;
  x.files = {shardedRankFileName(0), shardedRankFileName(1)};
  ShardedFlat flat;
  flat.key = "perceiver#0";
  flat.trainable = true;
  flat.dtype = "Float";
  flat.numel = 129;
  flat.padding = 1;
  flat.shardNumel = 65;
  flat.optimizerState = true;
  flat.members = {{"perceiver.latents", {8, 16}, 0, 128}, {"perceiver.scale", {}, 128, 1}};
  x.units = {{"perceiver", {flat}}, {"(root)", {}}};
  x.parameterOrder = {"perceiver.latents", "perceiver.scale"};
  x.buffers = {"vision_encoder.position_ids"};
  ShardedParamGroup decayed{1e-4,  {0.9, 0.999}, 1e-8, 0.1, false,
                            false, false,        1e-4, {0}, {"perceiver.latents"}};
  x.optimizer.paramGroups = {decayed};
  x.scheduler = {{1e-4}, 3, 4, false, false, {5e-5}};
  x.epoch = 1;
  x.resume = {"step", 3, 6, 1, R"({"epoch":1})", "00ff", {"0a0b"}, {1, 2, 3}, "{}"};
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fs_fuzz_seed_writer OUT_DIR TINY_PRESET_YAML\n";
    return 2;
  }
  const stdfs::path out = argv[1];
  write(out / "run_manifest", "running_ssh.json", encodeManifest(manifest()));
  write(out / "sharded_index", "hybrid_shard.json", encodeShardedIndex(shardedIndex()));
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

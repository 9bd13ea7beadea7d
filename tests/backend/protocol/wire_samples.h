// Sample wire records with every field set, shared by the protocol tests and
// the fuzz seed writer (fuzz/seed_writer.cpp): a hybrid-shard sharded index
// and a running SSH run's manifest.
#pragma once

#include <optional>

#include "backend/protocol/wire/run_manifest.h"
#include "backend/protocol/wire/sharded_index.h"

namespace fs::protocol::test {

inline ShardedIndexRecord sampleShardedIndex() {
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
  ShardedParamGroup plain{1e-4,  {0.9, 0.999}, 1e-8,         0.0, false,
                          false, false,        std::nullopt, {1}, {"perceiver.scale"}};
  x.optimizer.paramGroups = {decayed, plain};
  x.scheduler = {{1e-4, 1e-4}, 3, 4, false, false, {5e-5, 5e-5}};
  x.epoch = 1;
  x.resume.kind = "step";
  x.resume.step = 3;
  x.resume.iteration = 6;
  x.resume.epoch = 1;
  x.resume.dataPosition.value.source = "synthetic";
  x.resume.dataPosition.value.epoch = 1;
  x.resume.rngTorchCpu.data = {0x00, 0xff};
  x.resume.rngTorchCuda = {Bytes{{0x0a, 0x0b}}};
  x.resume.rngOwn = {1, 2, 3, 18446744073709551615ull};
  x.resume.manifest.value.engineVersion = "0.1.0";
  return x;
}

inline RunManifest sampleManifest() {
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
  m.config_file = "config.yaml";
  return m;
}

}  // namespace fs::protocol::test

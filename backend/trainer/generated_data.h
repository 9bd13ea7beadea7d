// data.source = "generated": the demo's data without user files. Real LAION
// and MMC4 shards of generated pictures and their BPE tokenizer are written
// into the run directory (shardgen/synthetic_shards.h) and then read by the
// ordinary shard pipeline, so the demo exercises tar reading, JPEG decode,
// CLIP preprocessing, tokenisation and the MMC4 rules like a real run.
// Every dataset of the config's list gets a set of its own (one, two, three
// or more; NOTE [One tokenizer for every dataset list] in generated_data.cpp);
// validation refuses a dataset that names shards of its own.
//
// Each rank writes its own copy (<run>/generated-data/rank<r>): the content is
// a pure function of the config, so the copies are identical, and no rank
// waits for another. A copy already complete (a resumed run) is reused: its
// `complete` marker records the shard counts, and the paths are made again
// from the directory and the counts, so nothing read back from the run
// directory is used as a path or a pattern.
//
// The shards are handed on as lists of file paths (GeneratedData::shardFiles,
// read with ShardPlan::fromFiles), never as a shard spec: the run directory
// comes from the config (name, run_root), and in a spec "::" splits a list
// and "pipe:" runs a command (issue 42 item 1; NOTE [Run directory text] in
// backend/protocol/config/run_location.h).
//
// Thread-safety: one call per rank.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::trainer {

struct GeneratedData {
  // The config with data.source "shards", model.lm.tokenizer_path (family opt)
  // filled in and every dataset's shards "" (the files are below).
  protocol::RunConfig config;
  // Per dataset of config.data.datasets, the shard files written for it.
  std::vector<std::vector<std::string>> shardFiles;
};

// Writes (or finds) the shards and returns where they are.
protocol::StatusOr<GeneratedData> prepareGeneratedData(const protocol::RunConfig& config,
                                                       const std::filesystem::path& runDir, int64_t rank,
                                                       int64_t world);

}  // namespace fs::trainer

// Helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/protocol/config_override.h"
#include "backend/protocol/config_yaml.h"
#include "backend/protocol/event_codec.h"

namespace fs::engine::test {

// The tiny preset on in-memory synthetic batches (the preset itself trains on
// generated shards; shard_pipeline_test covers that), with `sets` applied
// (each a --set path=value).
inline protocol::RunConfig tinyConfig(const std::vector<std::string>& sets = {}) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  load.config.data.source = "synthetic";
  auto problems = protocol::applyOverrides(&load.config, sets);
  EXPECT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  return load.config;
}

// The events of a run directory's events.jsonl. `finished`: the writer is
// done, so every line must decode and none may be partial; otherwise (a run
// still writing) undecodable and partial lines are simply not returned yet.
inline std::vector<protocol::Event> readEvents(const std::filesystem::path& dir, bool finished) {
  std::ifstream in(dir / "events.jsonl", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  protocol::EventDecoder decoder;
  std::vector<protocol::Event> out;
  for (const auto& line : decoder.feed(ss.str())) {
    if (finished) {
      EXPECT_EQ(line.kind, protocol::DecodedLine::Kind::kEvent) << line.error.message();
    }
    if (line.kind == protocol::DecodedLine::Kind::kEvent) out.push_back(line.event);
  }
  if (finished) {
    EXPECT_FALSE(decoder.hasPartialLine());
  }
  return out;
}

}  // namespace fs::engine::test

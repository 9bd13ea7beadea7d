// Helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/telemetry/stop_signals.h"

namespace fs::trainer::test {

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

// The step events of a finished run directory, in order.
inline std::vector<protocol::StepEvent> stepEvents(const std::filesystem::path& dir) {
  std::vector<protocol::StepEvent> out;
  for (const auto& e : readEvents(dir, /*finished=*/true)) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out.push_back(*s);
  }
  return out;
}

// A fresh folder under the temporary directory per test (root_), removed after it; no stop request
// left over from an earlier test.
class RunRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("fs_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    telemetry::clearStopRequests();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

// Every error event's message, one a line.
inline std::string errorMessages(const std::vector<protocol::Event>& events) {
  std::string out;
  for (const auto& e : events) {
    if (const auto* err = std::get_if<protocol::ErrorEvent>(&e.body)) out += err->message + "\n";
  }
  return out;
}

// Blocks until the run in `dir` has written `steps` step events (at most ~5 min).
inline void waitForSteps(const std::filesystem::path& dir, int steps) {
  for (int i = 0; i < 6000; ++i) {
    int n = 0;
    for (const auto& e : readEvents(dir, false))
      n += std::holds_alternative<protocol::StepEvent>(e.body) ? 1 : 0;
    if (n >= steps) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace fs::trainer::test

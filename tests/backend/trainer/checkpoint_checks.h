// Checks of a run directory after a cut, kill or full disk, shared by the
// tests that cut runs: checkpoint_kill_test and disk_full_test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/protocol/wire/events.h"

namespace fs::trainer::test {

// Each step's losses by dataset, from a run's step events (a later event of a step wins).
inline std::map<int64_t, std::map<std::string, double>> stepLosses(
    const std::vector<protocol::Event>& events) {
  std::map<int64_t, std::map<std::string, double>> out;
  for (const auto& e : events) {
    if (const auto* s = std::get_if<protocol::StepEvent>(&e.body)) out[s->step] = s->loss;
  }
  return out;
}

// The step of the newest complete checkpoint in `dir` (0: none), after checking that it reads and
// that its tensors match the hashes in its manifest (-1, with a test failure, when they do not).
inline int64_t newestIntact(const std::filesystem::path& dir) {
  auto newest = checkpoint::newestCompleteCheckpoint(dir, nullptr);
  if (!newest) return 0;
  auto ck = checkpoint::readCheckpoint(*newest);
  EXPECT_TRUE(ck.isOk()) << ck.status().message();
  if (!ck.isOk()) return -1;
  protocol::Status verified =
      checkpoint::verifyCheckpointManifest(ck->resume.manifest, ck->modelState, *newest);
  EXPECT_TRUE(verified.isOk()) << verified.message();
  return ck->resume.step;
}

}  // namespace fs::trainer::test

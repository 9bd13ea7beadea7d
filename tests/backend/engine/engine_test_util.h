// Helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/protocol/config_override.h"
#include "backend/protocol/config_yaml.h"

namespace fs::engine::test {

// The tiny preset with `sets` applied (each a --set path=value).
inline protocol::RunConfig tinyConfig(const std::vector<std::string>& sets = {}) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  auto problems = protocol::applyOverrides(&load.config, sets);
  EXPECT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  return load.config;
}

}  // namespace fs::engine::test

// Configs for the planner tests: presets with --set overrides.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/protocol/config/config_override.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::fsdp_plan::test {

inline protocol::RunConfig preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/" + name + ".yaml");
  EXPECT_TRUE(load.ok()) << protocol::formatProblems(load.problems);
  auto problems = protocol::applyOverrides(&load.config, sets);
  EXPECT_TRUE(problems.empty()) << protocol::formatProblems(problems);
  return load.config;
}

}  // namespace fs::fsdp_plan::test

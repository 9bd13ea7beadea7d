// The tiny preset as a RunConfig, for data and train tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "backend/protocol/config/config_yaml.h"

namespace fs::test {

inline protocol::RunConfig tinyConfig() {
  const auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  EXPECT_TRUE(load.ok()) << "tiny preset does not load";
  protocol::RunConfig config = load.config;
  config.data.source = "synthetic";  // these tests are about the in-memory source
  return config;
}

}  // namespace fs::test

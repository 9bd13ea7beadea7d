// Runs one Python oracle script (Debian's python3 with numpy and SciPy) on a
// JSON file the test wrote, and reads the JSON it answers. One subprocess per
// test, whatever the number of cases.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace fs::test {

// Writes `input` for tests/backend/data/documents/oracles/<script>, runs it,
// and returns its answer; a failed run is a test failure (null answer).
inline nlohmann::json askPythonOracle(const std::string& script, const nlohmann::json& input) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("fs-docs-oracle-" + std::to_string(::getpid()) + "-" + script);
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.json").string(), out = (dir / "out.json").string();
  std::ofstream(in) << input.dump();
  const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR +
                          "/tests/backend/data/documents/oracles/" + script + " " + in + " " + out;
  nlohmann::json answer;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream f(out);
    std::stringstream text;
    text << f.rdbuf();
    answer = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  EXPECT_FALSE(answer.is_null() || answer.is_discarded()) << "oracle failed: " << cmd;
  return answer;
}

}  // namespace fs::test

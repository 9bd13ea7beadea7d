// Helpers shared by the protocol tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace fs::test {

inline std::string sourcePath(const std::string& rel) {
  return std::string(FS_SOURCE_DIR) + "/" + rel;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fs::test

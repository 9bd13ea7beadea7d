// Runs a small Python script with the project's Python environment's torch
// (FS_PYTHON) as a test oracle.
//
// Tensors travel as torch.save-compatible files: runtime::pickleForTorchLoad
// writes what Python's torch.load reads (weights_only, its default), and torch::pickle_load reads plain
// containers of tensors that Python's torch.save wrote.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "backend/runtime/torch_pickle.h"

namespace fs::test {

// A scratch directory for one oracle exchange, removed when it goes out of scope.
struct ScratchDir {
  explicit ScratchDir(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("fs-oracle-" + name + "-" + std::to_string(::getpid())))
                 .string()) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path;
};

inline void saveForPython(const c10::IValue& value, const std::string& path) {
  const std::vector<char> bytes = fs::runtime::pickleForTorchLoad(value);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline c10::IValue loadFromPython(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes);
}

// Runs tests/backend/step/oracles/<script> <in> <out>; true on exit 0.
inline bool runOracle(const std::string& script, const std::string& in, const std::string& out) {
  const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR + "/tests/backend/step/oracles/" +
                          script + " " + in + " " + out;
  return std::system(cmd.c_str()) == 0;
}

inline bool pythonTorchAvailable() {
  const std::string cmd = std::string(FS_PYTHON) + " -c 'import torch' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace fs::test

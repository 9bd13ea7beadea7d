// Helpers shared by the tensorfile tests: the Python oracle's fixtures, the
// canonical text form of a value tree (make_fixtures.py's canon()), files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backend/tensorfile/torch_file.h"

namespace fs::tensorfile::test {

inline std::string hex(std::span<const std::byte> bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    const auto c = std::to_integer<unsigned>(b);
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

inline std::string hex(const std::string& s) {
  return hex(std::as_bytes(std::span(s.data(), s.size())));
}

inline std::string listText(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The canonical form of make_fixtures.py's canon(); tensors need `file` for their bytes.
inline std::string canon(const PyValue& v, const TorchFile* file = nullptr) {
  auto seq = [&](const std::vector<PyValuePtr>& items, const char* open, const char* close) {
    std::string s = open;
    for (const auto& item : items) s += canon(*item, file) + ",";
    return s + close;
  };
  switch (v.kind) {
    case PyKind::kNone:
      return "N";
    case PyKind::kBool:
      return v.boolValue ? "T" : "F";
    case PyKind::kInt:
      return "i" + std::to_string(v.intValue);
    case PyKind::kBigInt:
      return "i" + v.text;
    case PyKind::kFloat: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "f%016llx",
                    static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v.floatValue)));
      return buf;
    }
    case PyKind::kStr:
      return "s" + std::to_string(v.text.size()) + ":" + v.text;
    case PyKind::kBytes:
      return "b" + std::to_string(v.text.size()) + ":" + hex(v.text);
    case PyKind::kList:
      return seq(v.items, "[", "]");
    case PyKind::kTuple:
      return seq(v.items, "(", ")");
    case PyKind::kSet:
      return seq(v.items, "S{", "}");
    case PyKind::kFrozenSet:
      return seq(v.items, "Z{", "}");
    case PyKind::kDict: {
      std::string s = v.ordered ? "O{" : "{";
      for (const auto& [k, val] : v.entries) s += canon(*k, file) + ":" + canon(*val, file) + ",";
      return s + "}";
    }
    case PyKind::kTensor: {
      const TensorRef& t = *v.tensor;
      if (t.isMeta)
        return "meta(" + std::string(torchName(t.dtype)) + "|" + listText(t.shape) + "|" +
               listText(t.strides) + ")";
      std::string bytes = "<no file>";
      if (file) {
        auto data = file->contiguousBytes(t);
        bytes = data ? hex(data.value()) : "<" + data.status().message() + ">";
      }
      return "tensor(" + std::string(torchName(t.dtype)) + "|" + listText(t.shape) + "|" +
             listText(t.strides) + "|" + std::to_string(t.storageOffset) +
             "|rg=" + (t.requiresGrad ? "1" : "0") + "|param=" + (t.isParameter ? "1" : "0") + "|" + bytes +
             ")";
    }
    case PyKind::kDevice:
      return "device(" + v.text + ")";
    case PyKind::kDtype:
      return "dtype(" + v.text + ")";
    case PyKind::kObject:
      return "obj(" + v.text + ")";
    case PyKind::kGlobal:
      return "global(" + v.text + ")";
    case PyKind::kStorage:
      return "storage(" + v.storage->key + ")";
  }
  return "?";
}

inline std::vector<std::byte> readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

inline void writeBytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::byte> toBytes(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A fresh directory under the system temp dir, removed when the process exits.
inline std::string makeTempDir(const std::string& tag) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / ("fs_tensorfile_" + tag + "_XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) return "";
  static std::vector<std::string> dirs;
  if (dirs.empty()) {
    std::atexit([] {
      std::error_code ec;
      for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
    });
  }
  dirs.push_back(pattern);
  return pattern;
}

// Runs `script` (relative to this folder) with FS_PYTHON and `args`; true on exit 0.
inline bool runPython(const std::string& script, const std::string& args) {
  const std::string cmd = std::string(FS_PYTHON) + " " + FS_SOURCE_DIR + "/tests/backend/tensorfile/" +
                          script + " " + args + " > /dev/null";
  return std::system(cmd.c_str()) == 0;
}

// The oracle's fixtures (make_fixtures.py), written once per test process.
inline const std::string& fixtureDir() {
  static const std::string dir = [] {
    std::string d = makeTempDir("fixtures");
    if (d.empty() || !runPython("make_fixtures.py", d)) return std::string();
    return d;
  }();
  return dir;
}

inline const nlohmann::json& expected() {
  static const nlohmann::json json = [] {
    std::ifstream in(fixtureDir() + "/expected.json");
    return nlohmann::json::parse(in, nullptr, false);
  }();
  return json;
}

#define FS_REQUIRE_FIXTURES()                                                                       \
  do {                                                                                              \
    ASSERT_FALSE(::fs::tensorfile::test::fixtureDir().empty())                                      \
        << "make_fixtures.py failed (needs " FS_PYTHON " with torch: run scripts/install-deps.sh)"; \
  } while (0)

}  // namespace fs::tensorfile::test

// Test helpers: a temp dir, shards built by Python's tarfile (the oracle,
// make_shard.py), and reading a whole shard into memory.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/data/shards/tar_samples.h"

namespace fs::data::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fs_shards_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Member {
  std::string name;
  std::string data;
  std::string type = "file";  // file, dir, symlink, hardlink, fifo, chr
  int repeat = 1;             // data repeated this many times
  std::string link;
};

inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

inline std::string script() {
  return std::string(FS_SOURCE_DIR) + "/tests/backend/data/shards/make_shard.py";
}

// Builds `dir/file` with tarfile. `extraJson`: more spec fields, e.g.
// R"("truncate": {"member": "c.txt", "at": "data", "plus": 10})".
inline std::string makeShard(const TempDir& dir, const std::string& file, const std::vector<Member>& members,
                             const std::string& format = "ustar", const std::string& extraJson = "") {
  std::string json = "{\"format\": " + jsonString(format) + ", \"members\": [";
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    json += (i ? ", {" : "{") + std::string("\"name\": ") + jsonString(m.name) +
            ", \"data\": " + jsonString(m.data) + ", \"type\": " + jsonString(m.type) +
            ", \"repeat\": " + std::to_string(m.repeat) + ", \"link\": " + jsonString(m.link) + "}";
  }
  json += "]" + (extraJson.empty() ? std::string() : ", " + extraJson) + "}";
  std::string spec = dir / (file + ".json");
  std::ofstream(spec) << json;
  std::string out = dir / file;
  std::string cmd = std::string(FS_PYTHON) + " " + script() + " '" + spec + "' '" + out + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// Runs a command and returns its stdout.
inline std::string commandOutput(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  return out;
}

struct ReadResult {
  std::vector<Sample> samples;
  protocol::Status status;  // the error next() returned, if any
};

inline ReadResult readAll(TarSampleReader& reader) {
  ReadResult r;
  for (int guard = 0; guard < 100000; ++guard) {
    auto next = reader.next();
    if (!next.isOk()) {
      r.status = next.status();
      break;
    }
    if (!next.value()) break;
    r.samples.push_back(std::move(*next.value()));
  }
  return r;
}

inline std::string field(const Sample& s, const std::string& ext) {
  const Bytes* b = s.find(ext);
  return b ? std::string(b->begin(), b->end()) : std::string("<missing " + ext + ">");
}

// "key:ext1,ext2" per sample, for compact expectations.
inline std::vector<std::string> shape(const std::vector<Sample>& samples) {
  std::vector<std::string> out;
  for (const Sample& s : samples) {
    std::string line = s.key + ":";
    for (const auto& [ext, bytes] : s.fields) line += (line.back() == ':' ? "" : ",") + ext;
    out.push_back(line);
  }
  return out;
}

}  // namespace fs::data::testing

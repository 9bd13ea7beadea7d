// LocalFileSource: a ByteSource over a file of this machine; LocalRunDir: a run
// directory of this machine as a RunDirSource.
//
// LocalFileSource opens the file on the first stat() or read() and keeps it open: a
// file renamed over the path or removed is read to its end first (statPath() then
// says what the path names now; reopen() moves on to it). Reads are pread(), so the
// offset is the caller's.
//
// Thread-safety: one thread at a time. Does file I/O.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/monitor/byte_source.h"

namespace fs::app {

class LocalFileSource : public ByteSource {
 public:
  explicit LocalFileSource(std::filesystem::path path);
  ~LocalFileSource() override;
  LocalFileSource(const LocalFileSource&) = delete;
  LocalFileSource& operator=(const LocalFileSource&) = delete;

  std::string describe() const override { return path_.string(); }
  // kNotFound: no file (yet); kIOError "folder <dir> does not exist (or is not a
  // folder)" when its folder is missing too, or the open / fstat error.
  protocol::StatusOr<SourceStat> stat() override;
  protocol::StatusOr<std::size_t> read(std::uint64_t offset, char* buf, std::size_t n) override;
  protocol::StatusOr<SourceStat> statPath() override;
  void reopen() override;

 private:
  protocol::Status open();

  std::filesystem::path path_;
  int fd_ = -1;
};

class LocalRunDir : public RunDirSource {
 public:
  explicit LocalRunDir(std::filesystem::path dir) : dir_(std::move(dir)) {}

  std::string describe() const override { return dir_.string(); }
  std::unique_ptr<ByteSource> open(const std::string& relativePath) override;
  protocol::StatusOr<std::vector<std::string>> list(const std::string& relativeDir) override;

 private:
  std::filesystem::path dir_;
};

}  // namespace fs::app

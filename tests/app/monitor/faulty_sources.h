// Test stand-ins for a network between the follower and its files, over real files:
//  - FaultySource: a LocalFileSource that fails where a test says, and that can read
//    by path without an identity, as an SFTP source does (like leveldb's
//    fault-injection Env: it stands in for a failing network, not for the product);
//  - FilesHost: a remote::Host whose files are this machine's (readFile, stat, list
//    only), with reads that fail where a test says, to drive HostFileSource and
//    HostRunDir until the real LocalHost / SshHost are there to test them with.
// Thread-safety: one test thread (FilesHost: the follower's thread and the test's
// thread, through atomics).
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "app/monitor/local_file_source.h"
#include "app/remote/local_host.h"
#include "app/remote/remote_host.h"

namespace fs::app::testing {

struct Faults {
  bool by_path = false;                // reopen at every call and hide the identity (as over SFTP)
  std::uint64_t fail_at = UINT64_MAX;  // reads reaching past this offset stop there, and
  int read_failures = 0;               // the next ones from there fail with kIOError
  int stat_failures = 0;               // the next stat() calls fail with kIOError
  int failed = 0;                      // failures injected so far
};

class FaultySource : public ByteSource {
 public:
  FaultySource(std::filesystem::path path, std::shared_ptr<Faults> faults)
      : inner_(std::move(path)), faults_(std::move(faults)) {}

  std::string describe() const override { return inner_.describe(); }
  protocol::StatusOr<SourceStat> stat() override {
    if (faults_->stat_failures > 0) {
      --faults_->stat_failures;
      ++faults_->failed;
      return protocol::Status::ioError("connection lost: cannot stat " + describe());
    }
    if (faults_->by_path) inner_.reopen();
    auto st = inner_.stat();
    if (st && faults_->by_path) st->identity.reset();
    return st;
  }
  protocol::StatusOr<std::size_t> read(std::uint64_t offset, char* buf, std::size_t n) override {
    if (faults_->read_failures > 0 && offset + n > faults_->fail_at) {
      if (offset < faults_->fail_at) {
        n = static_cast<std::size_t>(faults_->fail_at - offset);
      } else {
        --faults_->read_failures;
        ++faults_->failed;
        return protocol::Status::ioError("connection lost: cannot read " + describe() + " at byte offset " +
                                         std::to_string(offset));
      }
    }
    if (faults_->by_path) inner_.reopen();
    return inner_.read(offset, buf, n);
  }
  protocol::StatusOr<SourceStat> statPath() override { return faults_->by_path ? stat() : inner_.statPath(); }
  void reopen() override { inner_.reopen(); }

 private:
  LocalFileSource inner_;
  std::shared_ptr<Faults> faults_;
};

// This machine's files through the product's LocalHost, with every n-th readFile()
// failing as a dropped connection would (fault injection, like leveldb's Env).
class FilesHost : public remote::Host {
 public:
  std::string name() const override { return "files"; }
  bool connected() const override { return true; }
  // Every `n`-th readFile() fails with kIOError (0: none).
  void failEveryNthRead(int n) { fail_every_ = n; }
  int failedReads() const { return failed_; }
  // Calls made so far: each is a round trip over SSH.
  int stats() const { return stats_; }
  int lists() const { return lists_; }

  protocol::StatusOr<remote::CommandResult> run(const std::vector<std::string>& argv,
                                                const remote::ExecOptions& options) override {
    return inner_.run(argv, options);
  }
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset,
                                           std::size_t max) override {
    if (const int n = fail_every_.load(); n > 0 && ++reads_ % n == 0) {
      ++failed_;
      return protocol::Status::ioError("files: connection lost reading " + path + " at byte offset " +
                                       std::to_string(offset));
    }
    return inner_.readFile(path, offset, max);
  }
  protocol::StatusOr<remote::FileInfo> stat(const std::string& path) override {
    ++stats_;
    return inner_.stat(path);
  }
  protocol::StatusOr<std::vector<remote::FileInfo>> list(const std::string& dir) override {
    ++lists_;
    return inner_.list(dir);
  }
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes,
                                   std::uint32_t mode) override {
    return inner_.writeFileAtomic(path, bytes, mode);
  }
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode) override {
    return inner_.writeFileIfAbsent(path, bytes, mode);
  }
  protocol::Status makeDirs(const std::string& path) override { return inner_.makeDirs(path); }
  protocol::Status remove(const std::string& path) override { return inner_.remove(path); }

 private:
  remote::LocalHost inner_;
  std::atomic<int> fail_every_{0};
  std::atomic<int> reads_{0};
  std::atomic<int> failed_{0};
  std::atomic<int> stats_{0};
  std::atomic<int> lists_{0};
};

}  // namespace fs::app::testing

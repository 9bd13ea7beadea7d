// HostFileSource: a ByteSource over a file on a remote::Host (SFTP reads from an
// offset over SSH, or any other Host); HostRunDir: a run directory on a Host as a
// RunDirSource, for RunFollower (FollowOptions::source).
//
// A Host reads by path, so there is no open file and no identity: the tails tell
// a replaced file by its content (NOTE [Sources and decoders] in byte_source.h).
// Every call is one Host call, a network round trip for an SshHost.
//
// The Host is not owned; it must outlive the sources. Thread-safety: each source
// is used by one thread at a time; the Host is thread-safe (remote_host.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/monitor/byte_source.h"
#include "app/remote/remote_host.h"

namespace fs::app {

class HostFileSource : public ByteSource {
 public:
  // `path`: absolute on the host.
  HostFileSource(remote::Host& host, std::string path);

  std::string describe() const override;
  // kNotFound: no file (yet); kIOError "folder <host>:<dir> does not exist (or is
  // not a folder)" when its folder is missing too, or the Host's error.
  protocol::StatusOr<SourceStat> stat() override;
  protocol::StatusOr<std::size_t> read(std::uint64_t offset, char* buf, std::size_t n) override;

 private:
  remote::Host& host_;
  std::string path_;
};

class HostRunDir : public RunDirSource {
 public:
  // `dir`: the run directory, absolute on the host.
  HostRunDir(remote::Host& host, std::string dir);

  std::string describe() const override;
  std::unique_ptr<ByteSource> open(const std::string& relativePath) override;
  protocol::StatusOr<std::vector<std::string>> list(const std::string& relativeDir) override;

 private:
  remote::Host& host_;
  std::string dir_;
};

// `relative` under `dir` on a host ("." or "": dir itself).
std::string joinHostPath(const std::string& dir, const std::string& relative);
// The names of the entries of `dir` on `host` (HostRunDir::list, and other run
// directories on a Host).
protocol::StatusOr<std::vector<std::string>> listHostDir(remote::Host& host, const std::string& dir);

// A HostRunDir that holds its Host (shared with whoever else uses it), for owners
// that hand the source on (RunMonitor::attach, the history's importer).
std::shared_ptr<RunDirSource> hostRunDir(std::shared_ptr<remote::Host> host, std::string dir);

}  // namespace fs::app

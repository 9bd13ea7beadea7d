// A checkpoint on another host, opened through its index only: a SparseMirror
// (backend/inspect/sparse_mirror.h) fed by the Host's SFTP reads, with a
// CheckpointIndex on it whose tensors are fetched when data() asks.
//
//   auto ckpt = openRemoteCheckpoint(sshHost, "/scratch/run/checkpoint_3.pt", cacheDir, {});
//   ckpt->index().tensors() ...   // stats, hashes and diffs fetch what they read
//
// Ownership: RemoteCheckpoint owns the mirror, the index on it and a private
// folder under the cache dir, removed with it. Every call blocks on the
// network: use it on a worker thread, never the GUI thread.
// Thread-safety: index()'s const methods as CheckpointIndex's.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "app/remote/remote_host.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/sparse_mirror.h"

namespace fs::app {

// inspect::RangeSource over a Host: describe() is "host:path", reads are
// Host::readRanges (pipelined over SSH).
class HostRangeSource final : public inspect::RangeSource {
 public:
  explicit HostRangeSource(std::shared_ptr<remote::Host> host) : host_(std::move(host)) {}
  std::string describe(const std::string& path) const override;
  protocol::StatusOr<Info> stat(const std::string& path) override;
  protocol::StatusOr<std::vector<std::string>> list(const std::string& dir) override;
  protocol::StatusOr<std::vector<std::string>> read(const std::string& path,
                                                    const std::vector<Range>& ranges) override;

 private:
  std::shared_ptr<remote::Host> host_;
};

class RemoteCheckpoint {
 public:
  ~RemoteCheckpoint();
  const inspect::CheckpointIndex& index() const { return *index_; }
  const inspect::SparseMirror& mirror() const { return *mirror_; }
  const std::string& where() const { return where_; }  // "host:/path"

 private:
  friend protocol::StatusOr<std::unique_ptr<RemoteCheckpoint>> openRemoteCheckpoint(
      std::shared_ptr<remote::Host>, const std::string&, const std::string&, inspect::MirrorOptions);
  RemoteCheckpoint() = default;
  std::string folder_;  // made under the cache dir; removed last
  std::string where_;
  std::unique_ptr<inspect::SparseMirror> mirror_;  // outlives index_ (its gate)
  std::optional<inspect::CheckpointIndex> index_;
};

// Opens `path` on `host` (a file or a checkpoint folder); the mirror's files go
// into a new folder under `cacheDir` (created if missing). Errors name host and path.
protocol::StatusOr<std::unique_ptr<RemoteCheckpoint>> openRemoteCheckpoint(
    std::shared_ptr<remote::Host> host, const std::string& path, const std::string& cacheDir,
    inspect::MirrorOptions options = {});

}  // namespace fs::app

// SparseMirror: a local copy of a checkpoint elsewhere (a cluster's disk, read
// over SFTP) that holds only what indexing reads — zip directories and local
// headers, pickles, safetensors headers, JSON indexes — in files of the full
// size with holes where tensor data lies. CheckpointIndex opens it like any
// local checkpoint; the mirror's gate() fetches a tensor's bytes when data()
// is about to hand them out. NOTE [Sparse mirrors].
//
//   auto mirror = SparseMirror::create(source, "/scratch/run/checkpoint_3.pt", cacheDir, {});
//   auto ckpt = CheckpointIndex::open(mirror->localPath(), {.gate = mirror->gate()});
//
// Ownership: the mirror owns its local files and removes them when destroyed;
// it must outlive every CheckpointIndex opened on it (the gate refers to it).
// Thread-safety: gate() may be called from several threads (statistics
// workers); fetches are serialised by the mirror.
//
// NOTE [Sparse mirrors]
// Readers written for mapped files stay as they are: a hole reads as zeros,
// so everything a reader touches before data() must be fetched by create()
// (an unfetched header would parse as garbage, and fail as a corrupt file),
// and everything data() hands out passes the gate. Each phase (end records,
// central directories, local headers, small entries) is one batch of ranges
// per file, so a high-latency link costs a few round trips, not one per
// tensor. A mapping sees bytes written into the file later (pages of a
// read-only private mapping are the page cache's until written).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"

namespace fs::inspect {

// Byte ranges of files elsewhere; the app implements it over a Host (SFTP).
// Calls block; the mirror calls it from whichever thread uses the mirror.
class RangeSource {
 public:
  struct Info {
    std::uint64_t size = 0;
    bool isDir = false;
  };
  struct Range {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };
  virtual ~RangeSource() = default;
  // "host:/path", for messages.
  virtual std::string describe(const std::string& path) const = 0;
  virtual StatusOr<Info> stat(const std::string& path) = 0;
  virtual StatusOr<std::vector<std::string>> list(const std::string& dir) = 0;  // entry names
  // Each range's bytes, in order (shorter at the end of the file).
  virtual StatusOr<std::vector<std::string>> read(const std::string& path,
                                                  const std::vector<Range>& ranges) = 0;
};

struct MirrorOptions {
  const std::atomic<bool>* cancel = nullptr;  // set: fetches stop with Status::cancelled
  // Bytes fetched so far and the bytes of the fetch under way (create(), then each gate call).
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  std::uint64_t chunkBytes = 8u << 20;  // a tensor's bytes are fetched in ranges of this size
};

class SparseMirror {
 public:
  // Mirrors the checkpoint at `remotePath` (a file, or a directory: ours sharded
  // or a Hugging Face model folder) into `localDir`, which must exist. Errors
  // name the remote path and what is wrong with it.
  static StatusOr<std::unique_ptr<SparseMirror>> create(std::shared_ptr<RangeSource> source,
                                                        const std::string& remotePath,
                                                        const std::string& localDir,
                                                        MirrorOptions options = {});
  ~SparseMirror();
  SparseMirror(const SparseMirror&) = delete;
  SparseMirror& operator=(const SparseMirror&) = delete;

  const std::string& localPath() const;  // the file or directory to open
  const std::string& remotePath() const;
  DataGate gate();                     // for OpenOptions::gate
  std::uint64_t bytesFetched() const;  // over the source, so far
  std::uint64_t bytesTotal() const;    // every mirrored file, as stored remotely

  struct Impl;

 private:
  explicit SparseMirror(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs::inspect

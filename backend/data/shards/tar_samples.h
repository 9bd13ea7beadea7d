// WebDataset samples streamed out of one tar shard (spec section 3, "Data").
//
// The shard is read forward through libarchive with our own read callback,
// so a multi-GB shard is never buffered: memory is one sample plus a read
// buffer. Formats: ustar, GNU (long names), pax (also gzip-compressed tars).
//
// Thread-safety: one reader is used by one thread at a time.
// Ownership: the reader owns its stream (file or pipe command) and stops it
// when the shard ends or the reader is destroyed.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/data/shards/shard_stream.h"
#include "backend/protocol/status.h"

namespace fs::data {

// NOTE [Sample grouping]
// As webdataset's tar_file_iterator + base_plus_ext, and OpenFlamingo's
// group_by_keys_nothrow (shard_webdataset_reader_oracle_test reads the same
// shards with both). Only regular-file members count. key = the member path
// up to the first "." of its last component (directory kept); extension =
// the rest, lowercased, possibly empty: "dir/a.b.JPG" -> key "dir/a", ext
// "b.jpg"; "a." -> key "a", ext "". Consecutive members with the same key
// form one sample; a member whose extension the sample already has starts a
// new sample with the same key (OpenFlamingo's reader; webdataset's own
// group_by_keys raises there). Skipped without changing grouping:
//   - non-regular members (dirs, symlinks, hard links, devices, fifos): non_regular
//   - metadata: a name without "/" that starts and ends with "__" ("__index__"):
//     not counted. "__meta__.json" and "d/__x__.txt" are ordinary members,
//     as webdataset reads them.
//   - a last component without a stem or a "." ("a", ".a", "d/__x__"): no_extension
// Dropped, counted and reported:
//   - unsafe_name: an absolute path or a ".." component; the whole sample of
//     that key is dropped. Names are never used as file system paths anyway.
//   - too_large: the member is over maxMemberBytes, or it would bring its
//     sample's members together over maxSampleBytes; it is skipped without
//     being read into memory (past the limit) and the sample keeps its other
//     members.
//   - corrupt_tar: libarchive failed (truncated, damaged header, not a tar).
//     The sample being built is dropped (it may be incomplete) and the shard
//     ends; samples before it were already delivered.
//   - empty_shard: the shard has 0 bytes. A valid tar with no members (only
//     the end-of-archive blocks) is not a problem and counts nothing.
enum class DropReason { kNonRegular, kNoExtension, kUnsafeName, kTooLarge, kCorruptTar, kEmptyShard };
inline constexpr size_t kDropReasonCount = 6;

// "non_regular", "no_extension", "unsafe_name", "too_large", "corrupt_tar", "empty_shard".
std::string_view dropReasonName(DropReason reason);

// Counts per reason: members for member reasons, events (at most one per
// shard) for corrupt_tar and empty_shard. Sums across shards with +=.
struct DropCounts {
  std::array<uint64_t, kDropReasonCount> counts{};

  uint64_t& operator[](DropReason r) { return counts[static_cast<size_t>(r)]; }
  uint64_t operator[](DropReason r) const { return counts[static_cast<size_t>(r)]; }
  uint64_t total() const;
  DropCounts& operator+=(const DropCounts& other);
  // "unsafe_name=2 corrupt_tar=1"; "" when nothing was dropped.
  std::string toString() const;
};

using Bytes = std::vector<uint8_t>;

struct Sample {
  std::string key;                                   // "dir/a"
  std::string url;                                   // the shard it came from
  std::map<std::string, Bytes, std::less<>> fields;  // lowercased extension -> member bytes

  const Bytes* find(std::string_view ext) const;
};

struct TarReaderOptions {
  // Members larger than this are dropped unread (too_large).
  uint64_t maxMemberBytes = uint64_t{256} << 20;
  // A sample's members together (too_large for the member that passes it): many
  // members under one key must not make one sample hold the whole shard.
  uint64_t maxSampleBytes = uint64_t{1} << 30;
  // Problem messages kept by problems(); later ones are only counted.
  size_t maxProblemMessages = 32;
  // Called with every problem message (unsafe_name, too_large, corrupt_tar,
  // empty_shard) from the thread calling next(). May be empty.
  std::function<void(const std::string&)> onProblem;
  // Wakes a read blocked on a pipe command (read_interrupt.h); may be null.
  // Must outlive the reader.
  const ReadInterrupt* interrupt = nullptr;
  // The url is a file path, opened as one even when it reads "pipe:..."
  // (openShardFile); false: a shard URL (openShardStream).
  bool filesOnly = false;
};

// REQUIRES (every method): not moved-from.
class TarSampleReader {
 public:
  // Opens the shard (file path or "pipe:<command>"). Errors only when it
  // cannot be opened or the command cannot be started; nothing is read yet.
  static protocol::StatusOr<TarSampleReader> open(const std::string& url, TarReaderOptions options = {});
  // Reads from a stream the caller made (tests use one that returns few bytes per read).
  static TarSampleReader fromStream(std::unique_ptr<ShardStream> stream, TarReaderOptions options = {});

  TarSampleReader(TarSampleReader&&) noexcept;
  TarSampleReader& operator=(TarSampleReader&&) noexcept;
  ~TarSampleReader();

  // The next sample, or nullopt at the end of the shard. Bad archive content
  // is not an error (see NOTE [Sample grouping]); an error means the stream
  // itself failed (I/O error, the pipe command exited non-zero), the partial
  // sample is dropped and the shard is over: later calls return nullopt.
  protocol::StatusOr<std::optional<Sample>> next();

  // Stops reading early (kills a pipe command). Later next() returns nullopt.
  void close();

  const std::string& url() const;
  const DropCounts& drops() const;
  // The first maxProblemMessages messages, each naming the shard and member.
  const std::vector<std::string>& problems() const;
  uint64_t problemsNotKept() const;

 private:
  struct Impl;
  explicit TarSampleReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;  // heap-pinned: libarchive's callbacks hold a pointer to it
};

}  // namespace fs::data

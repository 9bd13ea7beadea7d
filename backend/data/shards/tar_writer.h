// Writes a WebDataset shard: a pax tar (plain ustar headers unless a name
// needs more) of regular files, mode 0644, uid/gid 0, a fixed mtime, so the
// same members give the same bytes. Used by `flamingo-train shards
// make-synthetic` and `convert-mmc4`.
//
// Crash safety: everything goes to "<path>.partial", which finish() fsyncs
// and renames to <path>; a crash leaves at most a .partial file, and a writer
// destroyed without finish() removes it.
// Thread-safety: one writer is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "backend/protocol/status.h"

namespace fs::data {

struct TarWriterOptions {
  int64_t mtime = 0;  // seconds since the epoch, the same for every member
};

// REQUIRES (every method): not moved-from.
class TarWriter {
 public:
  // Creates (truncates) "<path>.partial". Errors name the file.
  static protocol::StatusOr<TarWriter> create(const std::string& path, TarWriterOptions options = {});

  TarWriter(TarWriter&&) noexcept;
  TarWriter& operator=(TarWriter&&) noexcept;
  ~TarWriter();  // without finish(): removes the .partial file

  // Appends one member. REQUIRES: not finished. Refuses (InvalidArgument)
  // names our reader would drop: empty, absolute, a ".." component, or a
  // trailing "/". After an I/O error every later call returns it.
  protocol::Status add(std::string_view memberName, std::span<const uint8_t> bytes);
  protocol::Status add(std::string_view memberName, std::string_view bytes);

  // Writes the end-of-archive blocks, fsyncs, renames to the final path.
  protocol::Status finish();

  const std::string& path() const;

 private:
  struct Impl;
  explicit TarWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs::data

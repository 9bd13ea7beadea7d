// An export's output file, written under a hidden temporary name beside its target
// and moved into place only when complete.
//
// NOTE [No partial exports]
// A reader (TensorBoard watching a folder, a script waiting for the CSV) never sees
// half an export: the bytes go to ".<name>.tmp-<pid>-<n>" (protocol::tempFileName)
// and commit() renames it over the target. An export that fails or is cancelled
// leaves nothing: the destructor removes an uncommitted temporary.
//
// Thread-safety: one thread per OutputFile. Ownership: owns its FILE handle.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>

#include "backend/protocol/status.h"

namespace fs::exporter {

class OutputFile {
 public:
  // Opens the temporary for `target`. IOError naming `target` (and why) when its
  // folder is missing or not writable.
  static protocol::StatusOr<std::unique_ptr<OutputFile>> create(const std::filesystem::path& target);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  protocol::Status write(std::string_view bytes);
  // Flushes, fsyncs and renames the temporary to the target: over an existing one
  // when `replace`, else InvalidArgument when the target exists by then.
  protocol::Status commit(bool replace);
  const std::filesystem::path& target() const { return target_; }

 private:
  OutputFile(std::filesystem::path target, std::filesystem::path temp, std::FILE* file);
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::FILE* file_;
  bool committed_ = false;
};

// "<path> exists; pass --force to replace it" when `path` exists and !force.
protocol::Status refuseExisting(const std::filesystem::path& path, bool force);

}  // namespace fs::exporter

// What every exporter takes (options, a progress callback, a cancel flag) and
// reports back.
//
// Thread-safety: plain values. `progress` is called on the exporting thread;
// `cancel` is read there and may be set from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace fs::exporter {

// Bytes of events.jsonl read so far, of `total` (the sizes when the export began).
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

struct ExportOptions {
  bool force = false;                         // replace an existing output
  ProgressFn progress;                        // after every chunk read; may be empty
  const std::atomic<bool>* cancel = nullptr;  // set: stop, remove the partial output, return kCancelled
  std::size_t chunk_bytes = 1u << 20;         // events.jsonl is read (and progress reported) in chunks
};

struct ExportReport {
  std::filesystem::path output;       // what was written ("-" for standard output)
  std::uint64_t events = 0;           // events read
  std::uint64_t points = 0;           // numbers written (scalars / CSV rows)
  std::uint64_t skipped = 0;          // lines of event types this build does not know
  std::vector<std::string> warnings;  // lines not exported, each naming file and line; a missing config
};

}  // namespace fs::exporter

// Reads a run directory's events.jsonl for an export: in chunks through the one
// decoder (backend/protocol/wire/event_codec.h), with progress and cancel.
//
// NOTE [Bad lines in an export]
// An export takes everything readable: a line the decoder rejects (corrupt JSON, a
// missing field, a newer major schema) is left out and named in a warning
// ("<run>/events.jsonl line 12 (byte offset 4096): ..."), and the export goes on; a
// partial last line (a run still writing it) is named likewise. The caller prints
// the warnings (the CLI on stderr, the GUI in its status line). Lines of unknown
// types are counted, not warned about: a newer engine's extra events are expected.
//
// Thread-safety: stateless functions; callbacks run on the calling thread.
#pragma once

#include <filesystem>
#include <functional>

#include "backend/export/export_options.h"
#include "backend/export/series.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"

namespace fs::exporter {

// OK when `run_dir` is a directory holding events.jsonl; otherwise NotFound /
// InvalidArgument naming the path.
protocol::Status checkRunDir(const std::filesystem::path& run_dir);

// Size of `run_dir`/events.jsonl; 0 when it cannot be read.
std::uint64_t eventsFileSize(const std::filesystem::path& run_dir);

// Decodes events.jsonl, calling `on_event` per event in file order and
// options.progress(base + read, total) after each chunk (total: `total` when
// non-zero, else the file's size). Warnings and counts go to `report`. Returns
// kCancelled when options.cancel was set (checked before every chunk), the first
// error `on_event` returns, or IOError naming the file.
protocol::Status readRunEvents(const std::filesystem::path& run_dir, const ExportOptions& options,
                               const std::function<protocol::Status(const protocol::Event&)>& on_event,
                               ExportReport* report, std::uint64_t base = 0, std::uint64_t total = 0);

// True when options.cancel is set.
inline bool cancelled(const ExportOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

// The rollback events of `run_dir` (NOTE [Abandoned steps in an export] in series.h): a first
// pass over events.jsonl, without progress or warnings (the export's own pass reports them).
protocol::StatusOr<Rollbacks> readRollbacks(const std::filesystem::path& run_dir,
                                            const ExportOptions& options);

// The name a run goes by in exports: its directory's name.
std::string runName(const std::filesystem::path& run_dir);

}  // namespace fs::exporter

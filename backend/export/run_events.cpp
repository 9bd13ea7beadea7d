#include "backend/export/run_events.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::exporter {

namespace stdfs = std::filesystem;
using protocol::Status;

Status checkRunDir(const stdfs::path& run_dir) {
  std::error_code ec;
  const auto st = stdfs::status(run_dir, ec);
  if (!stdfs::exists(st)) return Status::notFound("run directory " + run_dir.string() + " does not exist");
  if (!stdfs::is_directory(st)) return Status::invalidArgument(run_dir.string() + " is not a directory");
  const stdfs::path events = protocol::RunDir(run_dir).eventsFile();
  if (!stdfs::is_regular_file(events, ec))
    return Status::notFound(run_dir.string() + " holds no " + std::string(protocol::kEventsFileName) +
                            " (is it a run directory?)");
  return Status::ok();
}

std::uint64_t eventsFileSize(const stdfs::path& run_dir) {
  std::error_code ec;
  const auto size = stdfs::file_size(protocol::RunDir(run_dir).eventsFile(), ec);
  return ec ? 0 : size;
}

std::string runName(const stdfs::path& run_dir) {
  stdfs::path p = run_dir.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "runs/a/" names "a"
  return p.filename().string();
}

Status readRunEvents(const stdfs::path& run_dir, const ExportOptions& options,
                     const std::function<Status(const protocol::Event&)>& on_event, ExportReport* report,
                     std::uint64_t base, std::uint64_t total) {
  if (Status s = checkRunDir(run_dir); !s) return s;
  const stdfs::path path = protocol::RunDir(run_dir).eventsFile();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::ioError("cannot open " + path.string() + ": " + std::strerror(errno));
  if (total == 0) total = eventsFileSize(run_dir);

  protocol::EventDecoderOptions decoder_options;
  decoder_options.source_name = path.string();
  protocol::EventDecoder decoder(decoder_options);
  std::string chunk(std::max<std::size_t>(options.chunk_bytes, 1), '\0');
  std::uint64_t read = 0;
  while (true) {
    if (cancelled(options)) return Status::cancelled("export cancelled");
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (in.bad()) return Status::ioError("cannot read " + path.string() + ": " + std::strerror(errno));
    for (const protocol::DecodedLine& line : decoder.feed(std::string_view(chunk.data(), got))) {
      switch (line.kind) {
        case protocol::DecodedLine::Kind::kEvent:
          ++report->events;
          if (Status s = on_event(line.event); !s) return s;
          break;
        case protocol::DecodedLine::Kind::kSkipped:
          ++report->skipped;
          break;
        case protocol::DecodedLine::Kind::kError:
          report->warnings.push_back(line.error.message() + "; line not exported");
          break;
      }
    }
    read += got;
    if (options.progress) options.progress(base + read, std::max(total, base + read));
    if (got < chunk.size()) break;  // end of file
  }
  if (decoder.hasPartialLine())
    report->warnings.push_back(
        path.string() + " line " + std::to_string(decoder.nextLine()) +
        ": the last line has no newline (the run may still be writing it); not exported");
  return Status::ok();
}

protocol::StatusOr<Rollbacks> readRollbacks(const std::filesystem::path& run_dir,
                                            const ExportOptions& options) {
  ExportOptions quiet;
  quiet.cancel = options.cancel;
  ExportReport ignored;
  Rollbacks rollbacks;
  const Status s = readRunEvents(
      run_dir, quiet,
      [&](const protocol::Event& event) {
        rollbacks.note(event);
        return Status::ok();
      },
      &ignored);
  if (!s) return s;
  return rollbacks;
}

}  // namespace fs::exporter

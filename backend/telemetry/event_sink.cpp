#include "backend/telemetry/event_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::telemetry {

namespace stdfs = std::filesystem;

namespace {

constexpr std::uint64_t kChunk = 64u << 10;
// Lines longer than the decoder accepts cannot yield a seq; do not read them whole.
constexpr std::uint64_t kMaxLineBytes = 64u << 20;

std::string errnoText(int err) {
  return std::strerror(err);
}

// Reads exactly `n` bytes at `offset`; IOError on failure or early end of file.
Status preadAll(int fd, char* buf, std::uint64_t n, std::uint64_t offset, std::string_view source) {
  std::uint64_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::ioError("cannot read " + std::string(source) + ": " + errnoText(errno));
    if (r == 0) return Status::ioError("cannot read " + std::string(source) + ": file shrank while reading");
    got += static_cast<std::uint64_t>(r);
  }
  return Status::ok();
}

// Offset of the last '\n' in [0, end), or -1 when there is none.
StatusOr<std::int64_t> lastNewlineBefore(int fd, std::uint64_t end, std::string_view source) {
  std::string buf;
  while (end > 0) {
    std::uint64_t begin = end > kChunk ? end - kChunk : 0;
    buf.resize(end - begin);
    Status s = preadAll(fd, buf.data(), buf.size(), begin, source);
    if (!s) return s;
    auto pos = buf.rfind('\n');
    if (pos != std::string::npos) return static_cast<std::int64_t>(begin + pos);
    end = begin;
  }
  return std::int64_t{-1};
}

}  // namespace

StatusOr<std::uint64_t> scanNextSeq(int fd, std::uint64_t size, std::string_view source) {
  // Invariant: [0, end) holds complete lines only; the line examined is the last one.
  std::uint64_t end = size;
  std::string line;
  while (end > 0) {
    std::uint64_t newline = end - 1;  // the line's '\n'
    auto prev = lastNewlineBefore(fd, newline, source);
    if (!prev) return prev.status();
    std::uint64_t start = static_cast<std::uint64_t>(prev.value() + 1);
    if (newline - start <= kMaxLineBytes) {
      line.resize(newline - start);
      Status s = preadAll(fd, line.data(), line.size(), start, source);
      if (!s) return s;
      auto decoded = protocol::decodeEventLine(line, /*line_number=*/0, start, source);
      if (decoded && decoded->seq) return *decoded->seq + 1;
    }
    end = start;
  }
  return std::uint64_t{0};
}

FileEventSink::FileEventSink(stdfs::path path, std::unique_ptr<protocol::WritableFile> file,
                             EventFileResume resume)
    : path_(std::move(path)), file_(std::move(file)), size_(resume.size), resume_(resume) {}

FileEventSink::~FileEventSink() {
  if (file_) (void)file_->close();
}

StatusOr<std::unique_ptr<FileEventSink>> FileEventSink::open(const stdfs::path& path,
                                                             protocol::WriteEnv* env) {
  const std::string name = path.string();
  protocol::WriteEnv& writes = protocol::writeEnvOr(env);
  bool created = false;
  auto file = writes.openAppend(path, &created);
  if (!file) return file.status();
  if (created) {
    if (Status s = writes.syncDir(protocol::parentDir(path)); !s) return s;
  }
  // The tail is read through a descriptor of its own: reading changes nothing a crash could tear.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::ioError("cannot open " + name + " for reading: " + errnoText(errno));
  auto fail = [&](Status s) {
    ::close(fd);
    return s;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(Status::ioError("cannot stat " + name + ": " + errnoText(errno)));
  if (!S_ISREG(st.st_mode)) return fail(Status::ioError(name + " is not a regular file"));

  EventFileResume resume;
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  resume.existed = size > 0;
  if (size > 0) {
    auto last = lastNewlineBefore(fd, size, name);
    if (!last) return fail(last.status());
    std::uint64_t keep = static_cast<std::uint64_t>(last.value() + 1);
    if (keep < size) {
      // A torn last line from a crashed writer: no reader ever took it for an event.
      Status cut = file.value()->truncate(keep);
      if (cut) cut = file.value()->sync();
      if (!cut)
        return fail(Status::ioError("cannot cut the partial last line of " + name + ": " + cut.message()));
      resume.truncated_bytes = size - keep;
    }
    resume.size = keep;
    auto next = scanNextSeq(fd, keep, name);
    if (!next) return fail(next.status());
    resume.next_seq = next.value();
  }
  ::close(fd);
  return std::unique_ptr<FileEventSink>(new FileEventSink(path, std::move(file).value(), resume));
}

Status FileEventSink::append(std::string_view lines) {
  if (Status s = file_->append(lines); !s) {
    // Cut back whatever part of `lines` made it, so the file ends on a whole line.
    if (Status cut = file_->truncate(size_); !cut) {
      return Status::ioError("cannot append to " + path_.string() + ": " + s.message() +
                             "; cutting the partial line failed too: " + cut.message());
    }
    return Status::ioError("cannot append to " + path_.string() + ": " + s.message());
  }
  size_ += lines.size();
  return Status::ok();
}

Status FileEventSink::sync() {
  return file_->sync();
}

}  // namespace fs::telemetry

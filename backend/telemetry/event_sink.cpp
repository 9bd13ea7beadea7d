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

FileEventSink::FileEventSink(stdfs::path path, int fd, EventFileResume resume)
    : path_(std::move(path)), fd_(fd), size_(resume.size), resume_(resume) {}

FileEventSink::~FileEventSink() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::unique_ptr<FileEventSink>> FileEventSink::open(const stdfs::path& path) {
  const std::string name = path.string();
  bool created = true;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  }
  if (fd < 0) return Status::ioError("cannot open " + name + " for appending: " + errnoText(errno));
  auto fail = [&](Status s) {
    ::close(fd);
    return s;
  };
  if (created) {
    Status s = protocol::fsyncDir(path.parent_path().empty() ? stdfs::path(".") : path.parent_path());
    if (!s) return fail(s);
  }
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
      if (::ftruncate(fd, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd) != 0) {
        return fail(Status::ioError("cannot cut the partial last line of " + name + ": " + errnoText(errno)));
      }
      resume.truncated_bytes = size - keep;
    }
    resume.size = keep;
    auto next = scanNextSeq(fd, keep, name);
    if (!next) return fail(next.status());
    resume.next_seq = next.value();
  }
  return std::unique_ptr<FileEventSink>(new FileEventSink(path, fd, resume));
}

Status FileEventSink::append(std::string_view lines) {
  std::string_view rest = lines;
  while (!rest.empty()) {
    ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      // Cut back whatever part of `lines` made it, so the file ends on a whole line.
      if (rest.size() != lines.size() && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
        return Status::ioError("cannot append to " + path_.string() + ": " + errnoText(err) +
                               "; cutting the partial line failed too: " + errnoText(errno));
      }
      return Status::ioError("cannot append to " + path_.string() + ": " + errnoText(err));
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  size_ += lines.size();
  return Status::ok();
}

Status FileEventSink::sync() {
  if (::fdatasync(fd_) != 0)
    return Status::ioError("cannot sync " + path_.string() + ": " + errnoText(errno));
  return Status::ok();
}

}  // namespace fs::telemetry

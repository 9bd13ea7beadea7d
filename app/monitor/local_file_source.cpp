#include "app/monitor/local_file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace fs::app {
namespace {

using protocol::Status;
using protocol::StatusOr;

SourceStat fromStat(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_size),
          FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}};
}

}  // namespace

LocalFileSource::LocalFileSource(std::filesystem::path path) : path_(std::move(path)) {}

LocalFileSource::~LocalFileSource() {
  reopen();
}

void LocalFileSource::reopen() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status LocalFileSource::open() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0) return Status::ok();
  const int err = errno;
  if (err != ENOENT) return Status::ioError("cannot open " + path_.string() + ": " + std::strerror(err));
  // Not created yet: the writer has not started. A missing folder, though, will not
  // fill itself: an error to report (once) rather than a file to wait for quietly.
  std::error_code ec;
  if (!std::filesystem::is_directory(path_.parent_path(), ec)) {
    return Status::ioError("folder " + path_.parent_path().string() +
                           " does not exist (or is not a folder); waiting for it");
  }
  return Status::notFound(path_.string() + " does not exist");
}

StatusOr<SourceStat> LocalFileSource::stat() {
  if (fd_ < 0) {
    if (Status s = open(); !s) return s;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    return Status::ioError("cannot stat " + path_.string() + ": " + std::strerror(errno));
  return fromStat(st);
}

StatusOr<std::size_t> LocalFileSource::read(std::uint64_t offset, char* buf, std::size_t n) {
  if (fd_ < 0) {
    if (Status s = open(); !s) return s;
  }
  for (;;) {
    const ssize_t got = ::pread(fd_, buf, n, static_cast<off_t>(offset));
    if (got >= 0) return static_cast<std::size_t>(got);
    if (errno != EINTR) {
      return Status::ioError("cannot read " + path_.string() + " at byte offset " + std::to_string(offset) +
                             ": " + std::strerror(errno));
    }
  }
}

StatusOr<SourceStat> LocalFileSource::statPath() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) return fromStat(st);
  if (errno == ENOENT) return Status::notFound(path_.string() + " does not exist");
  return Status::ioError("cannot stat " + path_.string() + ": " + std::strerror(errno));
}

std::unique_ptr<ByteSource> LocalRunDir::open(const std::string& relativePath) {
  return std::make_unique<LocalFileSource>(dir_ / relativePath);
}

StatusOr<std::vector<std::string>> LocalRunDir::list(const std::string& relativeDir) {
  const std::filesystem::path dir = dir_ / relativeDir;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return Status::notFound(dir.string() + " does not exist");
  if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
  std::vector<std::string> names;
  for (const std::filesystem::directory_iterator end; it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
    if (ec) break;
  }
  return names;
}

}  // namespace fs::app

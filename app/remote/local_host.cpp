// LocalHost's files: POSIX calls, messages that name the path.
#include "app/remote/local_host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

// "local: <path>: <what>: <strerror>", kNotFound for ENOENT / ENOTDIR.
Status fileError(const std::string& path, const std::string& what, int err) {
  std::string msg = "local: " + path + ": " + what + ": " + ::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::notFound(std::move(msg));
  return Status::ioError(std::move(msg));
}

// Closes a descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

FileInfo infoOf(std::string name, const struct stat& st) {
  FileInfo info;
  info.name = std::move(name);
  info.size = static_cast<std::uint64_t>(st.st_size);
  info.mtime = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  info.is_dir = S_ISDIR(st.st_mode);
  info.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  return info;
}

std::string parentOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status writeAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fileError(path, "cannot write", errno);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::ok();
}

std::atomic<unsigned> tempCounter{0};

}  // namespace

StatusOr<std::string> LocalHost::readFile(const std::string& path, std::uint64_t offset, std::size_t max) {
  Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd < 0) return fileError(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return fileError(path, "cannot stat", errno);
  // Room for what the file holds now (it may grow while it is read: the rest is for the next call).
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  max = static_cast<std::size_t>(std::min<std::uint64_t>(max, size > offset ? size - offset : 0));
  std::string out;
  out.resize(max);
  std::size_t got = 0;
  while (got < max) {
    const ssize_t n = ::pread(file.fd, out.data() + got, max - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fileError(path, "cannot read at offset " + std::to_string(offset + got), errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

StatusOr<FileInfo> LocalHost::stat(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fileError(path, "cannot stat", errno);
  return infoOf(path, st);
}

StatusOr<std::vector<FileInfo>> LocalHost::list(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return fileError(dir, "cannot list", errno);
  std::vector<FileInfo> entries;
  const int dfd = ::dirfd(d);
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    // A dangling link is listed as itself.
    if (::fstatat(dfd, name.c_str(), &st, 0) != 0 &&
        ::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;  // gone since readdir
    }
    entries.push_back(infoOf(name, st));
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return fileError(dir, "cannot list", err);
  std::sort(entries.begin(), entries.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return entries;
}

namespace {

// A temporary file beside `path`, then rename (replace) or link (no replace: false when
// `path` exists); then the directory is fsynced so the result is durable.
StatusOr<bool> writeBeside(const std::string& path, std::string_view bytes, std::uint32_t mode,
                           bool replace) {
  const std::string dir = parentOf(path);
  const std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.empty()) return Status::invalidArgument("local: " + path + ": not a file name");
  const std::string temp = (dir == "/" ? "" : dir) + "/." + base + ".tmp-" + std::to_string(::getpid()) +
                           "-" + std::to_string(tempCounter.fetch_add(1));
  Status s;
  {
    Fd file(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (file.fd < 0) return fileError(temp, "cannot create", errno);
    s = writeAll(file.fd, bytes, temp);
    if (s && ::fchmod(file.fd, static_cast<mode_t>(mode)) != 0) s = fileError(temp, "cannot chmod", errno);
    if (s && ::fsync(file.fd) != 0) s = fileError(temp, "cannot fsync", errno);
  }
  bool written = true;
  if (s && replace && ::rename(temp.c_str(), path.c_str()) != 0) {
    s = fileError(path, "cannot rename " + temp + " over it", errno);
  }
  if (s && !replace) {
    if (::link(temp.c_str(), path.c_str()) != 0) {
      if (errno == EEXIST) {
        written = false;
      } else {
        s = fileError(path, "cannot link " + temp + " to it", errno);
      }
    }
    ::unlink(temp.c_str());
  }
  if (!s) {
    ::unlink(temp.c_str());
    return s;
  }
  if (!written) return false;
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.fd < 0) return fileError(dir, "cannot open the directory to fsync it", errno);
  if (::fsync(d.fd) != 0) return fileError(dir, "cannot fsync the directory", errno);
  return true;
}

}  // namespace

Status LocalHost::writeFileAtomic(const std::string& path, std::string_view bytes, std::uint32_t mode) {
  auto written = writeBeside(path, bytes, mode, true);
  return written ? Status::ok() : written.status();
}

StatusOr<bool> LocalHost::writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                            std::uint32_t mode) {
  return writeBeside(path, bytes, mode, false);
}

Status LocalHost::makeDirs(const std::string& path) {
  if (path.empty()) return Status::invalidArgument("local: makeDirs of an empty path");
  std::size_t pos = 0;
  for (;;) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return fileError(prefix, "cannot create the directory", errno);
    }
    if (pos == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fileError(path, "cannot stat", errno);
  if (!S_ISDIR(st.st_mode)) return Status::ioError("local: " + path + ": exists and is not a directory");
  return Status::ok();
}

Status LocalHost::remove(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return Status::ok();
  if (errno == EISDIR || errno == EPERM) {
    if (::rmdir(path.c_str()) == 0) return Status::ok();
  }
  return fileError(path, "cannot remove", errno);
}

}  // namespace fs::app::remote

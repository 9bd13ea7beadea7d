// The real file system behind WriteEnv (NOTE [One seam for file writes] in write_env.h).
#include "backend/protocol/io/write_env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace fs::protocol {

namespace stdfs = std::filesystem;

namespace {

std::string errnoText(int err) {
  return std::strerror(err);
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(stdfs::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(std::string_view data) override {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::ioError("cannot write " + path_.string() + ": " + errnoText(errno));
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return Status::ok();
  }
  Status sync() override {  // fdatasync: the data and the size (the directory entry needs syncDir)
    if (::fdatasync(fd_) != 0)
      return Status::ioError("cannot sync " + path_.string() + ": " + errnoText(errno));
    return Status::ok();
  }
  Status truncate(std::uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return Status::ioError("cannot truncate " + path_.string() + ": " + errnoText(errno));
    return Status::ok();
  }
  Status close() override {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Status::ioError("cannot close " + path_.string() + ": " + errnoText(errno));
    return Status::ok();
  }

 private:
  stdfs::path path_;
  int fd_;
};

// rename(from, to) refusing to replace: EEXIST when `to` exists.
int renameNoReplaceErrno(const stdfs::path& from, const stdfs::path& to) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
  // File systems without renameat2 flags: link() never replaces either.
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return 0;
  }
  int err = errno;
  if (err != EPERM && err != EOPNOTSUPP && err != ENOSYS && err != EXDEV) return err;
  // No hard links either (FAT, some FUSE mounts): check, then rename. Racy, as
  // OpenSSH's sftp-server is in the same case; the best such a file system allows.
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

class PosixWriteEnv : public WriteEnv {
 public:
  StatusOr<std::unique_ptr<WritableFile>> createFile(const stdfs::path& path, unsigned mode,
                                                     bool* exists) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
      int err = errno;
      if (exists) *exists = err == EEXIST;
      return Status::ioError("cannot create " + path.string() + ": " + errnoText(err));
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
  StatusOr<std::unique_ptr<WritableFile>> openAppend(const stdfs::path& path, bool* created) override {
    *created = true;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      *created = false;
      fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    }
    if (fd < 0)
      return Status::ioError("cannot open " + path.string() + " for appending: " + errnoText(errno));
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
  Status rename(const stdfs::path& from, const stdfs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return Status::ioError("cannot rename " + from.string() + " to " + to.string() + ": " +
                             errnoText(errno));
    return Status::ok();
  }
  StatusOr<bool> renameNoReplace(const stdfs::path& from, const stdfs::path& to) override {
    int err = renameNoReplaceErrno(from, to);
    if (err == 0) return true;
    if (err == EEXIST) return false;
    return Status::ioError("cannot move " + from.string() + " to " + to.string() + ": " + errnoText(err));
  }
  Status remove(const stdfs::path& path) override {
    if (::remove(path.c_str()) != 0 && errno != ENOENT)
      return Status::ioError("cannot remove " + path.string() + ": " + errnoText(errno));
    return Status::ok();
  }
  Status createDir(const stdfs::path& path) override {
    if (::mkdir(path.c_str(), 0755) == 0) return Status::ok();
    int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::ok();
    return Status::ioError("cannot create directory " + path.string() + ": " + errnoText(err));
  }
  Status syncDir(const stdfs::path& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return Status::ioError("cannot open directory " + dir.string() + " to sync it: " + errnoText(errno));
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    // Some file systems (and some FUSE mounts) cannot sync directories; that is not our error.
    if (rc != 0 && err != EINVAL && err != EROFS && err != ENOTSUP) {
      return Status::ioError("cannot sync directory " + dir.string() + ": " + errnoText(err));
    }
    return Status::ok();
  }
};

}  // namespace

WriteEnv& posixWriteEnv() {
  static PosixWriteEnv env;
  return env;
}

stdfs::path parentDir(const stdfs::path& path) {
  return path.parent_path().empty() ? stdfs::path(".") : path.parent_path();
}

Status removeTree(WriteEnv& env, const stdfs::path& path) {
  std::error_code ec;
  auto st = stdfs::symlink_status(path, ec);
  if (ec || !stdfs::exists(st)) return Status::ok();
  if (stdfs::is_directory(st)) {
    std::vector<stdfs::path> entries;
    for (stdfs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      entries.push_back(it->path());
    if (ec) return Status::ioError("cannot list " + path.string() + ": " + ec.message());
    std::sort(entries.begin(), entries.end());  // a deterministic order of operations
    for (const auto& e : entries) {
      if (Status s = removeTree(env, e); !s) return s;
    }
  }
  return env.remove(path);
}

Status createDirsDurably(WriteEnv& env, const stdfs::path& dir) {
  std::error_code ec;
  if (dir.empty() || stdfs::is_directory(dir, ec)) return Status::ok();
  if (dir.has_parent_path() && dir.parent_path() != dir) {
    if (Status s = createDirsDurably(env, dir.parent_path()); !s) return s;
  }
  if (Status s = env.createDir(dir); !s) return s;
  return env.syncDir(parentDir(dir));
}

}  // namespace fs::protocol

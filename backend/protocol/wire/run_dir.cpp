#include "backend/protocol/wire/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace fs::protocol {

namespace stdfs = std::filesystem;

namespace {

std::string errnoText(int err) {
  return std::strerror(err);
}

bool allDigits(std::string_view s) {
  return !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

template <class T>
bool parseNumber(std::string_view s, T* out) {
  if (!allDigits(s)) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Writes `contents` to a fresh temporary file in target's directory and fsyncs it.
// Returns the temporary path; on failure removes it.
StatusOr<stdfs::path> writeTemp(const stdfs::path& target, std::string_view contents,
                                const AtomicWriteOptions& options, std::optional<WriteStage>* crashed) {
  stdfs::path dir = target.parent_path().empty() ? stdfs::path(".") : target.parent_path();
  stdfs::path temp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = dir / tempFileName(target.filename().string());
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, options.mode);
    if (fd < 0 && errno != EEXIST) {
      return Status::ioError("cannot write " + target.string() + ": creating temporary file " +
                             temp.string() + ": " + errnoText(errno));
    }
  }
  if (fd < 0) return Status::ioError("cannot write " + target.string() + ": no free temporary file name");
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    return Status::ioError("cannot write " + target.string() + ": " + what + " " + temp.string() + ": " +
                           errnoText(err));
  };
  if (!writeAll(fd, contents)) return fail("writing");
  if (options.crash_after && options.crash_after(WriteStage::kTempWritten)) {
    ::close(fd);
    *crashed = WriteStage::kTempWritten;
    return temp;
  }
  if (::fsync(fd) != 0) return fail("syncing");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return Status::ioError("cannot write " + target.string() + ": closing " + temp.string() + ": " +
                           errnoText(err));
  }
  if (options.crash_after && options.crash_after(WriteStage::kTempSynced)) *crashed = WriteStage::kTempSynced;
  return temp;
}

Status simulatedCrash(const stdfs::path& target, WriteStage stage) {
  static constexpr const char* kNames[] = {"temp written", "temp synced", "renamed"};
  return Status::ioError("simulated crash writing " + target.string() + " after stage '" +
                         kNames[static_cast<int>(stage)] + "'");
}

// rename(temp, target) refusing to replace: EEXIST when target exists.
int renameNoReplaceErrno(const stdfs::path& temp, const stdfs::path& target) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
  // File systems without renameat2 flags: link() never replaces either.
  if (::link(temp.c_str(), target.c_str()) == 0) {
    ::unlink(temp.c_str());
    return 0;
  }
  int err = errno;
  if (err != EPERM && err != EOPNOTSUPP && err != ENOSYS && err != EXDEV) return err;
  // No hard links either (FAT, some FUSE mounts): check, then rename. Racy, as
  // OpenSSH's sftp-server is in the same case; the best such a file system allows.
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) return EEXIST;
  return ::rename(temp.c_str(), target.c_str()) == 0 ? 0 : errno;
}

StatusOr<bool> writeAtomically(const stdfs::path& target, std::string_view contents,
                               const AtomicWriteOptions& options, bool replace) {
  std::optional<WriteStage> crashed;
  auto temp = writeTemp(target, contents, options, &crashed);
  if (!temp) return temp.status();
  if (crashed) return simulatedCrash(target, *crashed);
  if (replace) {
    if (::rename(temp->c_str(), target.c_str()) != 0) {
      int err = errno;
      ::unlink(temp->c_str());
      return Status::ioError("cannot write " + target.string() + ": renaming " + temp->string() + ": " +
                             errnoText(err));
    }
  } else {
    int err = renameNoReplaceErrno(temp.value(), target);
    if (err != 0) {
      ::unlink(temp->c_str());
      if (err == EEXIST) return false;
      return Status::ioError("cannot create " + target.string() + ": renaming " + temp->string() + ": " +
                             errnoText(err));
    }
  }
  if (options.crash_after && options.crash_after(WriteStage::kRenamed)) {
    return simulatedCrash(target, WriteStage::kRenamed);
  }
  stdfs::path dir = target.parent_path().empty() ? stdfs::path(".") : target.parent_path();
  Status synced = fsyncDir(dir);
  if (!synced) return synced;
  return true;
}

}  // namespace

std::string agentEventsFileName(std::string_view node) {
  std::string safe(node.empty() ? "unknown" : node);
  for (auto& c : safe) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (safe[0] == '.') safe[0] = '_';
  return "agent-" + safe + ".jsonl";
}

std::string rankLogFileName(int rank) {
  return "rank-" + std::to_string(rank) + ".log";
}

std::string checkpointFileName(CheckpointKind kind, int epoch, std::int64_t step) {
  switch (kind) {
    case CheckpointKind::kEpoch:
      return "checkpoint_" + std::to_string(epoch) + ".pt";
    case CheckpointKind::kStep:
      return "checkpoint_step" + std::to_string(step) + ".pt";
    case CheckpointKind::kFinal:
      return "checkpoint_final.pt";
  }
  return "checkpoint_final.pt";
}

std::optional<CheckpointName> parseCheckpointFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "checkpoint_", kSuffix = ".pt";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  std::string_view mid = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  CheckpointName out;
  if (mid == "final") {
    out.kind = CheckpointKind::kFinal;
    return out;
  }
  if (mid.starts_with("step")) {
    out.kind = CheckpointKind::kStep;
    if (parseNumber(mid.substr(4), &out.step)) return out;
    return std::nullopt;
  }
  out.kind = CheckpointKind::kEpoch;
  if (parseNumber(mid, &out.epoch)) return out;
  return std::nullopt;
}

Status RunDir::create() const {
  for (const stdfs::path& dir : {root_, controlDir(), controlDoneDir(), logsDir()}) {
    std::error_code ec;
    bool made = stdfs::create_directories(dir, ec);
    if (ec) return Status::ioError("cannot create directory " + dir.string() + ": " + ec.message());
    if (made) {
      Status s = fsyncDir(dir.parent_path().empty() ? stdfs::path(".") : dir.parent_path());
      if (!s) return s;
    }
  }
  return Status::ok();
}

Status atomicWriteFile(const stdfs::path& target, std::string_view contents,
                       const AtomicWriteOptions& options) {
  auto r = writeAtomically(target, contents, options, /*replace=*/true);
  return r ? Status::ok() : r.status();
}

StatusOr<bool> atomicCreateFile(const stdfs::path& target, std::string_view contents,
                                const AtomicWriteOptions& options) {
  return writeAtomically(target, contents, options, /*replace=*/false);
}

StatusOr<bool> renameNoReplace(const stdfs::path& from, const stdfs::path& to) {
  int err = renameNoReplaceErrno(from, to);
  if (err == 0) return true;
  if (err == EEXIST) return false;
  return Status::ioError("cannot move " + from.string() + " to " + to.string() + ": " + errnoText(err));
}

Status fsyncDir(const stdfs::path& dir) {
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

std::string tempFileName(std::string_view final_name) {
  static std::atomic<std::uint64_t> counter{0};
  return "." + std::string(final_name) + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

bool isTempFileName(std::string_view name) {
  return name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string_view::npos;
}

Status removeStaleTempFiles(const stdfs::path& dir, std::vector<stdfs::path>* removed) {
  std::error_code ec;
  stdfs::directory_iterator it(dir, ec), end;
  if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
    std::string name = it->path().filename().string();
    if (!isTempFileName(name) || !it->is_regular_file(ec)) continue;
    if (stdfs::remove(it->path(), ec) && removed) removed->push_back(it->path());
    if (ec) return Status::ioError("cannot remove " + it->path().string() + ": " + ec.message());
  }
  return Status::ok();
}

StatusOr<std::string> readSmallFile(const stdfs::path& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::notFound(path.string() + " does not exist");
    return Status::ioError("cannot open " + path.string() + ": " + errnoText(err));
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::ioError("cannot read " + path.string() + ": " + errnoText(err));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      return Status::invalidArgument(path.string() + " is larger than " + std::to_string(max_bytes) +
                                     " bytes; expected a small file");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace fs::protocol

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

std::string errnoString(int err) {
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

// Writes `contents` to a fresh temporary file in target's directory and fsyncs it.
// Returns the temporary path; on failure removes it.
StatusOr<stdfs::path> writeTemp(WriteEnv& env, const stdfs::path& target, std::string_view contents,
                                const AtomicWriteOptions& options) {
  const stdfs::path dir = parentDir(target);
  stdfs::path temp;
  std::unique_ptr<WritableFile> file;
  for (int attempt = 0; attempt < 16 && !file; ++attempt) {
    temp = dir / tempFileName(target.filename().string());
    bool exists = false;
    auto created = env.createFile(temp, options.mode, &exists);
    if (created) {
      file = std::move(created).value();
    } else if (!exists) {
      return Status::ioError("cannot write " + target.string() +
                             ": creating temporary file: " + created.status().message());
    }
  }
  if (!file) return Status::ioError("cannot write " + target.string() + ": no free temporary file name");
  auto fail = [&](const Status& s) {
    (void)env.remove(temp);
    return Status::ioError("cannot write " + target.string() + ": " + s.message());
  };
  if (Status s = file->append(contents); !s) return fail(s);
  if (Status s = file->sync(); !s) return fail(s);
  if (Status s = file->close(); !s) return fail(s);
  return temp;
}

StatusOr<bool> writeAtomically(const stdfs::path& target, std::string_view contents,
                               const AtomicWriteOptions& options, bool replace) {
  WriteEnv& env = writeEnvOr(options.env);
  auto temp = writeTemp(env, target, contents, options);
  if (!temp) return temp.status();
  if (replace) {
    if (Status s = env.rename(temp.value(), target); !s) {
      (void)env.remove(temp.value());
      return Status::ioError("cannot write " + target.string() + ": " + s.message());
    }
  } else {
    auto moved = env.renameNoReplace(temp.value(), target);
    if (!moved || !moved.value()) (void)env.remove(temp.value());
    if (!moved) return Status::ioError("cannot create " + target.string() + ": " + moved.status().message());
    if (!moved.value()) return false;
  }
  if (Status synced = env.syncDir(parentDir(target)); !synced) return synced;
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

Status RunDir::create(WriteEnv* env) const {
  for (const stdfs::path& dir : {root_, controlDir(), controlDoneDir(), logsDir()}) {
    if (Status s = createDirsDurably(writeEnvOr(env), dir); !s) return s;
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

StatusOr<bool> renameNoReplace(const stdfs::path& from, const stdfs::path& to, WriteEnv* env) {
  return writeEnvOr(env).renameNoReplace(from, to);
}

Status fsyncDir(const stdfs::path& dir, WriteEnv* env) {
  return writeEnvOr(env).syncDir(dir);
}

std::string tempFileName(std::string_view final_name) {
  static std::atomic<std::uint64_t> counter{0};
  return "." + std::string(final_name) + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

bool isTempFileName(std::string_view name) {
  return name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string_view::npos;
}

Status removeStaleTempFiles(const stdfs::path& dir, std::vector<stdfs::path>* removed, WriteEnv* env) {
  std::error_code ec;
  stdfs::directory_iterator it(dir, ec), end;
  if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::ioError("cannot list " + dir.string() + ": " + ec.message());
    std::string name = it->path().filename().string();
    if (!isTempFileName(name) || !it->is_regular_file(ec)) continue;
    if (Status s = writeEnvOr(env).remove(it->path()); !s) return s;
    if (removed) removed->push_back(it->path());
  }
  return Status::ok();
}

StatusOr<std::string> readSmallFile(const stdfs::path& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return Status::notFound(path.string() + " does not exist");
    return Status::ioError("cannot open " + path.string() + ": " + errnoString(err));
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::ioError("cannot read " + path.string() + ": " + errnoString(err));
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

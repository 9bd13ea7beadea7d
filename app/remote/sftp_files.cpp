// SftpFiles: Host's file operations over one reused SFTP session.
#include "app/remote/sftp_files.h"

#include <fcntl.h>

#include <deque>
#include <random>

#include "app/remote/ssh_internal.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr std::size_t kChunk = 32768;
constexpr std::size_t kReadChunk = 131072;  // one read request; NOTE [Pipelined SFTP reads]
constexpr std::size_t kReadsInFlight = 8;

std::string baseName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

FileInfo toInfo(sftp_attributes a, const std::string& name) {
  FileInfo info;
  info.name = name;
  info.size = a->size;
  info.mtime = static_cast<std::int64_t>(a->mtime64 != 0 ? a->mtime64 : a->mtime);
  info.is_dir = a->type == SSH_FILEXFER_TYPE_DIRECTORY;
  info.mode = a->permissions & 07777;
  return info;
}

}  // namespace

Status SftpFiles::ensureSftp() {
  if (connection_.endpoint().sftp != nullptr) return Status::ok();
  sftp_session sftp = sftp_new(connection_.endpoint().session);
  if (sftp == nullptr)
    return Status::ioError(connection_.label() +
                           ": cannot open an SFTP channel: " + ssh_get_error(connection_.endpoint().session));
  if (sftp_init(sftp) != SSH_OK) {
    const std::string error = ssh_get_error(connection_.endpoint().session);
    sftp_free(sftp);
    return Status::ioError(connection_.label() + ": the SFTP subsystem did not start: " + error);
  }
  connection_.endpoint().sftp = sftp;  // freed with the session (~Endpoint)
  return Status::ok();
}

// Runs `body` with a connected SFTP session under the watchdog; a failure of
// the session (not of the file) closes it so that the next call reconnects.
Status SftpFiles::sftpCall(const std::string& what, std::size_t bytes,
                           const std::function<Status(void* sftp, bool* io_failed)>& body) {
  Status connected = connection_.connect();
  if (!connected.isOk()) return connected;
  bool io_failed = false;
  Status status;
  {
    const auto within =
        std::chrono::seconds(connectTimeout(connection_.spec()) + connection_.aliveWindowSeconds() +
                             static_cast<int>(bytes >> 20));
    WatchdogScope guard(connection_.watchdog(), ssh_get_fd(connection_.endpoint().session), within);
    status = ensureSftp();
    if (status.isOk()) {
      status = body(connection_.endpoint().sftp, &io_failed);
    } else {
      io_failed = true;
    }
  }
  if (io_failed || connection_.watchdog().fired()) {
    connection_.checkAlive();
    if (!connection_.connected() && !status.isOk()) {
      return Status::ioError(status.message() + " (connection lost; the next call reconnects)");
    }
  }
  return status;
}

// The Status for a failed SFTP request about `what`.
static Status sftpFailure(sftp_session sftp, const std::string& what, bool* io_failed) {
  ssh_session s = sftp->session;
  if (!ssh_is_connected(s) || (ssh_get_status(s) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0) {
    *io_failed = true;
    return Status::ioError(what + ": " + ssh_get_error(s));
  }
  switch (sftp_get_error(sftp)) {
    case SSH_FX_NO_SUCH_FILE:
    case SSH_FX_NO_SUCH_PATH:
      return Status::notFound(what + ": no such file or directory");
    case SSH_FX_PERMISSION_DENIED:
      return Status::ioError(what + ": permission denied");
    case SSH_FX_FILE_ALREADY_EXISTS:
      return Status::ioError(what + ": already exists");
    case SSH_FX_NO_CONNECTION:
    case SSH_FX_CONNECTION_LOST:
      *io_failed = true;
      return Status::ioError(what + ": connection lost");
    default:
      return Status::ioError(what + ": failed (SFTP error " + std::to_string(sftp_get_error(sftp)) + ": " +
                             ssh_get_error(s) + ")");
  }
}

// NOTE [Pipelined SFTP reads]
// sftp_read() is one request and one answer: a round trip per 32 KiB, so a large read
// (a finished run's events.jsonl, hundreds of MB, opened in 16 MiB chunks) waited on the
// network and on sshd in turn, at ~60 MB/s over a local link. readFile() keeps up to
// kReadsInFlight requests of kReadChunk outstanding (OpenSSH's sftp client pipelines too;
// its server answers up to 255 KiB a request, and 1 MiB in flight is below libssh's
// channel window). The server may answer a request short (it must only
// at the end of the file): then the bytes after it are not contiguous, so the answers still
// outstanding are collected and dropped (after an end-of-file answer libssh returns 0 for
// every request of that file without taking its answer off the queue, a leak for the
// session's life; sftp_seek64 clears that flag), and the call returns what it has. The
// window starts at one request and doubles with each full answer, so a small file (or a
// poll that finds a few hundred bytes) costs one request as before.
StatusOr<std::string> SftpFiles::readFile(const std::string& path, std::uint64_t offset, std::size_t max) {
  const std::string what = connection_.label() + ": " + path;
  std::string data;
  Status status = sftpCall(what, max, [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_file file = sftp_open(sftp, path.c_str(), O_RDONLY, 0);
    if (file == nullptr) return sftpFailure(sftp, what, io_failed);
    Status result;
    if (sftp_seek64(file, offset) != 0) result = sftpFailure(sftp, what, io_failed);
    struct Request {
      int id;
      std::uint32_t len;
    };
    std::deque<Request> in_flight;
    std::size_t window = 1;
    std::size_t requested = 0;
    bool done = false;    // EOF, a short answer or an error: no more requests, answers dropped
    std::string dropped;  // answers read only to take them off the queue
    while (result.isOk() || !in_flight.empty()) {
      while (!done && result.isOk() && in_flight.size() < window && requested < max) {
        const auto len = static_cast<std::uint32_t>(std::min(kReadChunk, max - requested));
        const int id = sftp_async_read_begin(file, len);
        if (id < 0) {
          result = sftpFailure(sftp, what, io_failed);
          done = true;
          break;
        }
        in_flight.push_back({id, len});
        requested += len;
      }
      if (in_flight.empty()) break;
      const Request r = in_flight.front();
      in_flight.pop_front();
      if (done) sftp_seek64(file, 0);  // clears libssh's end-of-file flag: the answer is collected
      const bool keep = !done;
      const std::size_t at = data.size();
      if (keep) {
        data.resize(at + r.len);  // read in place: no copy through a buffer
      } else {
        dropped.resize(r.len);
      }
      const int n = sftp_async_read(file, keep ? data.data() + at : dropped.data(), r.len,
                                    static_cast<std::uint32_t>(r.id));
      if (keep) data.resize(at + static_cast<std::size_t>(std::max(n, 0)));
      if (n < 0) {
        if (result.isOk()) result = sftpFailure(sftp, what, io_failed);
        done = true;
        if (*io_failed) break;  // the session is gone: no answers to collect
      } else if (keep) {
        if (static_cast<std::uint32_t>(n) < r.len) {
          done = true;
        } else {
          window = std::min(window * 2, kReadsInFlight);
        }
      }
    }
    sftp_close(file);
    return result;
  });
  if (!status.isOk()) return status;
  return data;
}

// NOTE [Pipelined SFTP reads] for many ranges: every range is cut into requests of
// kReadChunk, kReadsInFlight of them outstanding, collected in the order sent. The
// ranges are clipped to the file's size first, so a short answer means the file
// changed under the read: an error.
StatusOr<std::vector<std::string>> SftpFiles::readRanges(const std::string& path,
                                                         const std::vector<ByteRange>& ranges) {
  const std::string what = connection_.label() + ": " + path;
  std::vector<std::string> out(ranges.size());
  std::uint64_t total = 0;
  for (const ByteRange& r : ranges) total += r.length;
  Status status = sftpCall(what, static_cast<std::size_t>(total), [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_file file = sftp_open(sftp, path.c_str(), O_RDONLY, 0);
    if (file == nullptr) return sftpFailure(sftp, what, io_failed);
    sftp_attributes attributes = sftp_fstat(file);
    if (attributes == nullptr) {
      Status failed = sftpFailure(sftp, what, io_failed);
      sftp_close(file);
      return failed;
    }
    const std::uint64_t size = attributes->size;
    sftp_attributes_free(attributes);
    struct Request {
      std::size_t range;
      std::uint32_t len;
      int id;
    };
    std::deque<Request> in_flight;
    std::size_t next = 0;      // the range being requested
    std::uint64_t within = 0;  // bytes of it requested so far
    Status result;
    std::string dropped;
    for (;;) {
      while (result.isOk() && in_flight.size() < kReadsInFlight && next < ranges.size()) {
        const std::uint64_t end = std::min(ranges[next].offset + ranges[next].length, size);
        const std::uint64_t pos = ranges[next].offset + within;
        if (pos >= end) {
          ++next;
          within = 0;
          continue;
        }
        const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(kReadChunk, end - pos));
        int id = -1;
        if (sftp_seek64(file, pos) == 0) id = sftp_async_read_begin(file, len);
        if (id < 0) {
          result = sftpFailure(sftp, what, io_failed);
          break;
        }
        in_flight.push_back({next, len, id});
        within += len;
      }
      if (in_flight.empty() || *io_failed) break;
      const Request r = in_flight.front();
      in_flight.pop_front();
      const bool keep = result.isOk();
      if (!keep) sftp_seek64(file, 0);  // clears libssh's end-of-file flag: the answer is collected
      std::string& dst = keep ? out[r.range] : dropped;
      const std::size_t at = keep ? dst.size() : 0;
      dst.resize(at + r.len);
      const int n = sftp_async_read(file, dst.data() + at, r.len, static_cast<std::uint32_t>(r.id));
      dst.resize(at + static_cast<std::size_t>(std::max(n, 0)));
      if (n < 0) {
        if (result.isOk()) result = sftpFailure(sftp, what, io_failed);
      } else if (keep && static_cast<std::uint32_t>(n) < r.len) {
        result = Status::ioError(what + ": ended at " + std::to_string(ranges[r.range].offset + dst.size()) +
                                 " bytes, before the " + std::to_string(size) +
                                 " it had when opened (changed while it was read?)");
      }
    }
    sftp_close(file);
    return result;
  });
  if (!status.isOk()) return status;
  return out;
}

StatusOr<FileInfo> SftpFiles::stat(const std::string& path) {
  const std::string what = connection_.label() + ": " + path;
  FileInfo info;
  Status status = sftpCall(what, 0, [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_attributes a = sftp_stat(sftp, path.c_str());
    if (a == nullptr) return sftpFailure(sftp, what, io_failed);
    info = toInfo(a, path);
    sftp_attributes_free(a);
    return Status::ok();
  });
  if (!status.isOk()) return status;
  return info;
}

StatusOr<std::vector<FileInfo>> SftpFiles::list(const std::string& dir) {
  const std::string what = connection_.label() + ": " + dir;
  std::vector<FileInfo> entries;
  Status status = sftpCall(what, 0, [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_dir d = sftp_opendir(sftp, dir.c_str());
    if (d == nullptr) return sftpFailure(sftp, what, io_failed);
    while (sftp_attributes a = sftp_readdir(sftp, d)) {
      const std::string name = a->name != nullptr ? a->name : "";
      if (name != "." && name != "..") entries.push_back(toInfo(a, name));
      sftp_attributes_free(a);
    }
    Status result = sftp_dir_eof(d) ? Status::ok() : sftpFailure(sftp, what, io_failed);
    sftp_closedir(d);
    return result;
  });
  if (!status.isOk()) return status;
  return entries;
}

Status SftpFiles::writeFileAtomic(const std::string& path, std::string_view bytes, std::uint32_t mode) {
  auto written = writeFile(path, bytes, mode, /*replace=*/true);
  return written.isOk() ? Status::ok() : written.status();
}

StatusOr<bool> SftpFiles::writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                            std::uint32_t mode) {
  return writeFile(path, bytes, mode, /*replace=*/false);
}

// A temporary file beside `path`, then SFTP's rename, which never replaces (OpenSSH's
// server links, then unlinks); replacing falls back to mv. Without `replace`, a taken
// name is `false`, and the temporary file is removed.
StatusOr<bool> SftpFiles::writeFile(const std::string& path, std::string_view bytes, std::uint32_t mode,
                                    bool replace) {
  const std::string what = connection_.label() + ": " + path;
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string suffix;
  for (int i = 0; i < 8; ++i) suffix += digits[rng() % 36];
  const std::string dir = dirName(path);
  const std::string temp = (dir == "/" ? "" : dir) + "/." + baseName(path) + "." + suffix;
  bool renamed = false;
  bool taken = false;
  Status status = sftpCall(what, bytes.size(), [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_file file = sftp_open(sftp, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
    if (file == nullptr) return sftpFailure(sftp, connection_.label() + ": " + temp, io_failed);
    Status result;
    for (std::size_t done = 0; done < bytes.size() && result.isOk();) {
      const ssize_t n = sftp_write(file, bytes.data() + done, std::min(kChunk, bytes.size() - done));
      if (n <= 0) {
        result = sftpFailure(sftp, connection_.label() + ": " + temp, io_failed);
      } else {
        done += static_cast<std::size_t>(n);
      }
    }
    if (result.isOk() && sftp_extension_supported(sftp, "fsync@openssh.com", "1") && sftp_fsync(file) != 0) {
      result = sftpFailure(sftp, connection_.label() + ": " + temp + " (fsync)", io_failed);
    }
    if (sftp_close(file) != 0 && result.isOk())
      result = sftpFailure(sftp, connection_.label() + ": " + temp, io_failed);
    if (result.isOk() && sftp_chmod(sftp, temp.c_str(), mode) != 0) {
      result = sftpFailure(sftp, connection_.label() + ": " + temp + " (chmod)", io_failed);
    }
    // SFTP v3 rename does not replace an existing file; then mv does (below).
    if (result.isOk()) renamed = sftp_rename(sftp, temp.c_str(), path.c_str()) == 0;
    if (result.isOk() && !renamed && !replace) {
      sftp_attributes existing = sftp_lstat(sftp, path.c_str());
      taken = existing != nullptr;
      if (existing != nullptr) sftp_attributes_free(existing);
      if (!taken)
        result =
            sftpFailure(sftp, connection_.label() + ": cannot rename " + temp + " to " + path, io_failed);
      if (!*io_failed) sftp_unlink(sftp, temp.c_str());
      return result;
    }
    if (!result.isOk() && !*io_failed) sftp_unlink(sftp, temp.c_str());
    return result;
  });
  if (!status.isOk()) return status;
  if (renamed) return true;
  if (!replace)
    return !taken ? StatusOr<bool>(Status::ioError(what + ": not written")) : StatusOr<bool>(false);
  // rename(2) through mv: atomic, and replaces the old file.
  auto moved = exec_.run({"mv", "-f", "--", temp, path}, ExecOptions{});
  if (moved.isOk() && moved->exit_code == 0) return true;
  const std::string why = moved.isOk() ? moved->err : moved.status().message();
  sftpCall(what, 0, [&](void* p, bool*) {
    sftp_unlink(static_cast<sftp_session>(p), temp.c_str());
    return Status::ok();
  });
  return Status::ioError(what + ": cannot rename " + temp + " over it: " + why);
}

Status SftpFiles::makeDirs(const std::string& path) {
  const std::string what = connection_.label() + ": " + path;
  return sftpCall(what, 0, [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    std::string prefix = path.rfind('/', 0) == 0 ? "/" : "";
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t slash = path.find('/', start);
      if (slash == std::string::npos) slash = path.size();
      const std::string part = path.substr(start, slash - start);
      start = slash + 1;
      if (part.empty() || part == ".") continue;
      prefix += (prefix.empty() || prefix.back() == '/' ? "" : "/") + part;
      sftp_attributes a = sftp_stat(sftp, prefix.c_str());
      if (a != nullptr) {
        const bool is_dir = a->type == SSH_FILEXFER_TYPE_DIRECTORY;
        sftp_attributes_free(a);
        if (!is_dir)
          return Status::ioError(connection_.label() + ": " + prefix + " exists and is not a directory");
        continue;
      }
      if (sftp_mkdir(sftp, prefix.c_str(), 0755) != 0) {
        // Someone else may have made it meanwhile.
        sftp_attributes again = sftp_stat(sftp, prefix.c_str());
        if (again == nullptr)
          return sftpFailure(sftp, connection_.label() + ": " + prefix + " (mkdir)", io_failed);
        sftp_attributes_free(again);
      }
    }
    return Status::ok();
  });
}

Status SftpFiles::remove(const std::string& path) {
  const std::string what = connection_.label() + ": " + path;
  return sftpCall(what, 0, [&](void* p, bool* io_failed) {
    auto sftp = static_cast<sftp_session>(p);
    sftp_attributes a = sftp_lstat(sftp, path.c_str());
    if (a == nullptr) return sftpFailure(sftp, what, io_failed);
    const bool is_dir = a->type == SSH_FILEXFER_TYPE_DIRECTORY;
    sftp_attributes_free(a);
    const int rc = is_dir ? sftp_rmdir(sftp, path.c_str()) : sftp_unlink(sftp, path.c_str());
    return rc == 0 ? Status::ok() : sftpFailure(sftp, what, io_failed);
  });
}

}  // namespace fs::app::remote

// stream: a file's bytes from an offset on, followed like tail -f, framed for the
// app's remote follower (app/monitor/stream_file_source.h). Torch-free, so the
// tools-only build has it too. Format: NOTE [Stream format] below and
// docs/cluster.md "Following over an exec channel".
//
// NOTE [Stream format]
// Version 1. Everything is written to stdout; the first line is
//   flamingo-stream 1\n
// then frames, each a header line of ASCII words, the data frame followed by its
// payload:
//   S <dev> <ino> <size>\n  the file held open: its identity and size (fstat). Sent
//                           when the file is opened and whenever its size changes,
//                           before the data up to that size. A size below the
//                           stream's position means the file was truncated: the
//                           stream goes on from <size>.
//   D <len>\n<len bytes>    the next bytes of the held file (from --offset on,
//                           contiguous); at most 256 KiB a frame.
//   P <dev> <ino> <size>\n  the path now names another file than the one held
//                           (renamed over it); the held file is still streamed.
//   P -\n                   the path names no file (removed); likewise.
//   P =\n                   the path names the held file again.
//   N file\n | N folder\n   nothing to hold open yet: the file (or its folder)
//                           does not exist; waited for, then S follows.
//   E <message>\n           a fatal error (not a regular file, unreadable); exit 1.
// Unknown frame letters are an error for a version-1 reader; a later version
// changes the number in the first line.
// It runs until stdin reaches EOF (the channel or pipe was closed), stdout's reader
// goes (a write fails: SIGPIPE; or, while idle, poll() says POLLERR/POLLHUP), or SIGHUP, so it never outlives
// the client's channel; memory is one 256 KiB buffer. The path is polled every --poll-ms.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"

namespace fs::cli {
namespace {

const char* const kUsage = "usage: flamingo-train stream [--offset N] [--poll-ms M] FILE\n";

const char* const kHelp =
    "\nWrites FILE's bytes from byte offset N (default 0) to stdout and keeps following it, like\n"
    "tail -f, in a framed format the app reads over an SSH exec channel (format version 1):\n"
    "a first line 'flamingo-stream 1', then frames:\n"
    "  S <dev> <ino> <size>   the file held open (identity, size); size below the position: truncated\n"
    "  D <len>                followed by the next <len> bytes of the file\n"
    "  P <dev> <ino> <size>   the path names another file now (P - : removed; P = : the held one again)\n"
    "  N file | N folder      the file (or its folder) does not exist yet; waiting for it\n"
    "  E <message>            a fatal error; exit 1\n"
    "It runs until stdin is closed (EOF), stdout is closed (SIGPIPE, or seen while idle) or SIGHUP.\n"
    "Exit 0 when stdin or stdout closed, 1 after an E frame, 2 for bad options.\n\n";

}  // namespace

const std::vector<OptionSpec> kStreamOptions = {
    {"offset", true, false, "N", "the byte offset to start from (default 0)"},
    {"poll-ms", true, false, "M", "how often to look at the file, 1-60000 ms (default 100)"},
    {"help", false, false, "", "Show this help"},
};

namespace {

constexpr std::size_t kChunk = 256 * 1024;

// Writes all of `data`; false when stdout is gone.
bool writeAll(const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDOUT_FILENO, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool writeLine(const std::string& line) {
  return writeAll(line.data(), line.size());
}

std::string parentOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string identityWords(const struct stat& st) {
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + " " +
         std::to_string(static_cast<unsigned long long>(st.st_ino)) + " " +
         std::to_string(static_cast<long long>(st.st_size));
}

class Streamer {
 public:
  Streamer(std::string path, std::uint64_t offset, int poll_ms)
      : path_(std::move(path)), pos_(offset), poll_ms_(poll_ms), buf_(new char[kChunk]) {}
  ~Streamer() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Returns the exit code.
  int run() {
    if (!writeLine("flamingo-stream 1\n")) return kExitOk;
    while (true) {
      int step = fd_ < 0 ? openFile() : follow();
      if (step >= 0) return step;
      if (step == kMore) continue;
      // Idle: wait for the next poll, or for stdin to close, or for the reader of
      // stdout to go (POLLERR / POLLHUP on its end: an idle stream notices too).
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {STDOUT_FILENO, 0, 0}};
      const int ready = ::poll(fds, 2, poll_ms_);
      if (ready > 0 && (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return kExitOk;
      if (ready > 0 && fds[0].revents != 0) {
        char sink[512];
        const ssize_t r = ::read(STDIN_FILENO, sink, sizeof sink);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return kExitOk;  // EOF: the client left
        // Bytes on stdin mean nothing in version 1.
      }
    }
  }

 private:
  static constexpr int kIdle = -1;
  static constexpr int kMore = -2;

  int fatal(const std::string& message) {
    writeLine("E " + message + "\n");
    return kExitFailure;
  }

  int openFile() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT && errno != ENOTDIR)
        return fatal("cannot open " + path_ + ": " + std::strerror(errno));
      struct stat parent {};
      const bool folder = ::stat(parentOf(path_).c_str(), &parent) == 0 && S_ISDIR(parent.st_mode);
      const std::string missing = folder ? "N file\n" : "N folder\n";
      if (missing != last_missing_) {
        if (!writeLine(missing)) return kExitOk;
        last_missing_ = missing;
      }
      return kIdle;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return fatal(path_ + " is not a regular file");
    }
    fd_ = fd;
    held_ = st;
    last_missing_.clear();
    sent_size_ = -1;
    path_state_ = "=";
    return kMore;
  }

  // Sends what changed of the held file and the path; kIdle when nothing did.
  int follow() {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return fatal("cannot stat " + path_ + ": " + std::strerror(errno));
    bool sent = false;
    if (st.st_size != sent_size_) {
      if (!writeLine("S " + identityWords(st) + "\n")) return kExitOk;
      sent_size_ = st.st_size;
      const auto size = static_cast<std::uint64_t>(st.st_size);
      if (size < pos_) pos_ = size;  // truncated: on from the new end
      sent = true;
    }
    // The data up to the size just announced, in bounded frames.
    while (pos_ < static_cast<std::uint64_t>(sent_size_)) {
      const std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(kChunk, static_cast<std::uint64_t>(sent_size_) - pos_));
      const ssize_t n = ::pread(fd_, buf_.get(), want, static_cast<off_t>(pos_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return fatal("cannot read " + path_ + " at offset " + std::to_string(pos_) + ": " +
                     std::strerror(errno));
      }
      if (n == 0) break;  // shrank since fstat: the next S says so
      if (!writeLine("D " + std::to_string(n) + "\n") || !writeAll(buf_.get(), static_cast<std::size_t>(n)))
        return kExitOk;
      pos_ += static_cast<std::uint64_t>(n);
      sent = true;
    }
    // What the path names now.
    struct stat now {};
    std::string state;
    if (::stat(path_.c_str(), &now) != 0) {
      state = "-";
    } else if (now.st_dev == held_.st_dev && now.st_ino == held_.st_ino) {
      state = "=";
    } else {
      state = identityWords(now);
    }
    // Another file's growth is not news; its identity is.
    const auto key = [](const std::string& s) { return s.substr(0, s.rfind(' ')); };
    if (key(state) != key(path_state_)) {
      if (!writeLine("P " + state + "\n")) return kExitOk;
      path_state_ = state;
      sent = true;
    }
    return sent ? kMore : kIdle;
  }

  std::string path_;
  std::uint64_t pos_;
  int poll_ms_;
  std::unique_ptr<char[]> buf_;
  int fd_ = -1;
  struct stat held_ {};
  long long sent_size_ = -1;
  std::string path_state_ = "=";
  std::string last_missing_;
};

bool parseWhole(const std::string& text, std::uint64_t max, std::uint64_t* out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && ptr == end && *out <= max;
}

}  // namespace

int runStream(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kStreamOptions);
  auto fail = [&](const std::string& message) {
    io.err << "flamingo-train stream: " << message << "\n" << kUsage;
    return kExitUsage;
  };
  if (!parsed) return fail(parsed.status().message());
  if (parsed->has("help")) {
    io.out << kUsage << kHelp << formatOptions(kStreamOptions);
    return kExitOk;
  }
  if (parsed->positionals.empty()) return fail("which file? FILE is required");
  if (parsed->positionals.size() > 1) return fail("unexpected argument '" + parsed->positionals[1] + "'");
  std::uint64_t offset = 0, poll_ms = 100;
  if (parsed->has("offset") && !parseWhole(parsed->get("offset"), INT64_MAX, &offset))
    return fail("--offset: '" + parsed->get("offset") + "' is not a byte offset (a whole number from 0)");
  if (parsed->has("poll-ms") && (!parseWhole(parsed->get("poll-ms"), 60000, &poll_ms) || poll_ms < 1))
    return fail("--poll-ms: '" + parsed->get("poll-ms") + "' is not a whole number from 1 to 60000");
  const std::string path = parsed->positionals[0];
  if (path.empty()) return fail("FILE is empty");
  io.out.flush();
  // Never outlive the channel: a closed stdout or a hangup ends the process even
  // when the parent ignored these signals.
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGHUP, SIG_DFL);
  Streamer streamer(path, offset, static_cast<int>(poll_ms));
  return streamer.run();
}

}  // namespace fs::cli

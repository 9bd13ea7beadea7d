// flamingo-train stream: the real binary on real files — the framing (NOTE [Stream
// format] in backend/cli/cmd_stream.cpp), the offset, growth, replacement,
// truncation, removal, a missing file or folder, bad options, and the exits on
// stdin EOF and on a closed stdout. Waits are hang guards, never asserted durations.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace stdfs = std::filesystem;

const std::string kBin = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";
constexpr int kGuardMs = 20'000;

void append(const stdfs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

std::string identity(const stdfs::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino);
}

struct Frame {
  std::string line;  // the header line without '\n'
  std::string data;  // a D frame's payload
};

// The engine as a child with pipes; its frames read one by one.
class Streamer {
 public:
  explicit Streamer(const std::vector<std::string>& args) {
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<std::string> argv = {kBin, "stream"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    EXPECT_EQ(::posix_spawn(&pid_, kBin.c_str(), &actions, nullptr, cargs.data(), environ), 0);
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Streamer() {
    closeIn();
    closeOut();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void hangUp() { ::kill(pid_, SIGHUP); }
  void closeIn() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  void closeOut() {
    if (out_ >= 0) ::close(out_);
    out_ = -1;
  }

  // The next frame; an empty line when the output ended (or the guard ran out).
  Frame next() {
    Frame f;
    const auto nl = fill([&] { return buf_.find('\n') != std::string::npos; });
    if (!nl) return f;
    const std::size_t at = buf_.find('\n');
    f.line = buf_.substr(0, at);
    buf_.erase(0, at + 1);
    if (f.line.rfind("D ", 0) == 0) {
      const std::size_t len = std::stoul(f.line.substr(2));
      if (!fill([&] { return buf_.size() >= len; })) return {};
      f.data = buf_.substr(0, len);
      buf_.erase(0, len);
    }
    return f;
  }
  // Frames until one whose line starts with `prefix` (that one returned); the data
  // of the D frames on the way appended to *data.
  Frame until(const std::string& prefix, std::string* data = nullptr) {
    for (;;) {
      Frame f = next();
      if (f.line.empty() || f.line.rfind(prefix, 0) == 0) return f;
      if (data != nullptr) *data += f.data;
    }
  }
  // Data frames until `want` bytes came (other frames skipped).
  std::string data(std::size_t want) {
    std::string got;
    while (got.size() < want) {
      Frame f = next();
      if (f.line.empty()) break;
      got += f.data;
    }
    return got;
  }
  // The exit: code, or 128 + signal; -1 when it did not end within the guard.
  int wait() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      ::usleep(5'000);
    }
    return -1;
  }

 private:
  template <class Done>
  bool fill(Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kGuardMs);
    while (!done()) {
      if (out_ < 0 || std::chrono::steady_clock::now() >= end) return false;
      pollfd p{out_, POLLIN, 0};
      ::poll(&p, 1, 100);
      char b[65536];
      const ssize_t n = ::read(out_, b, sizeof b);
      if (n == 0) return false;
      if (n > 0) buf_.append(b, static_cast<std::size_t>(n));
    }
    return true;
  }

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buf_;
};

struct Outcome {
  int code = -1;
  std::string out, err;
};

Outcome runOnce(const std::vector<std::string>& args) {
  const std::string dir = stdfs::temp_directory_path() / ("fs_stream_cli_" + std::to_string(::getpid()));
  stdfs::create_directories(dir);
  std::string command = kBin + " stream";
  for (const auto& a : args) command += " '" + a + "'";  // fixed test strings, no quotes inside
  command += " </dev/null >" + dir + "/out 2>" + dir + "/err";
  Outcome r;
  const int status = std::system(command.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream o(dir + "/out"), e(dir + "/err");
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

class StreamCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_stream_cli_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
    file_ = dir_ / "events.jsonl";
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  stdfs::path dir_, file_;
};

TEST_F(StreamCli, HeaderIdentitySizeAndTheBytesFromTheOffset) {
  append(file_, "hello\nworld\n");
  Streamer s({"--offset", "2", "--poll-ms", "5", file_.string()});
  EXPECT_EQ(s.next().line, "flamingo-stream 1");
  EXPECT_EQ(s.next().line, "S " + identity(file_) + " 12");
  const Frame d = s.next();
  EXPECT_EQ(d.line, "D 10");
  EXPECT_EQ(d.data, "llo\nworld\n");
}

TEST_F(StreamCli, FollowsGrowthWithTheSizeBeforeTheBytes) {
  append(file_, "a\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  EXPECT_EQ(s.until("D").data, "a\n");
  append(file_, "bb\n");
  EXPECT_EQ(s.next().line, "S " + identity(file_) + " 5");
  EXPECT_EQ(s.next().data, "bb\n");
  // Large growth comes in bounded frames, contiguous.
  const std::string big(600 * 1024, 'x');
  append(file_, big);
  std::string got = s.data(big.size());
  EXPECT_EQ(got, big);
}

TEST_F(StreamCli, ReplacementIsAPathFrameAndTheHeldFileGoesOn) {
  append(file_, "old\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  // Keep the old file reachable, then rename another one over the path.
  stdfs::create_hard_link(file_, dir_ / "old.jsonl");
  append(dir_ / "new.jsonl", "new file\n");
  const std::string new_id = identity(dir_ / "new.jsonl");
  stdfs::rename(dir_ / "new.jsonl", file_);
  EXPECT_EQ(s.until("P").line, "P " + new_id + " 9");
  // The held (old) file is still streamed.
  append(dir_ / "old.jsonl", "more\n");
  std::string data;
  s.until("S", &data);
  EXPECT_EQ(s.next().data, "more\n");
  // Back to the held file: P =.
  stdfs::rename(dir_ / "old.jsonl", file_);
  EXPECT_EQ(s.until("P").line, "P =");
}

TEST_F(StreamCli, RemovalIsPathDash) {
  append(file_, "x\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  stdfs::remove(file_);
  EXPECT_EQ(s.until("P").line, "P -");
}

TEST_F(StreamCli, TruncationIsASmallerSizeAndTheStreamGoesOnFromThere) {
  append(file_, "0123456789\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  stdfs::resize_file(file_, 3);
  EXPECT_EQ(s.until("S").line, "S " + identity(file_) + " 3");
  append(file_, "abc");
  EXPECT_EQ(s.until("S").line, "S " + identity(file_) + " 6");
  EXPECT_EQ(s.next().data, "abc");
}

TEST_F(StreamCli, AnOffsetBeyondTheEndIsReportedAsASmallerSize) {
  append(file_, "abc");
  Streamer s({"--offset", "100", "--poll-ms", "5", file_.string()});
  s.next();
  EXPECT_EQ(s.next().line, "S " + identity(file_) + " 3");
  append(file_, "d");
  s.until("S");
  EXPECT_EQ(s.next().data, "d");
}

TEST_F(StreamCli, AMissingFileIsWaitedForAMissingFolderSaidSo) {
  Streamer s({"--poll-ms", "5", file_.string()});
  s.next();
  EXPECT_EQ(s.next().line, "N file");
  append(file_, "late\n");
  EXPECT_EQ(s.next().line, "S " + identity(file_) + " 5");
  EXPECT_EQ(s.next().data, "late\n");

  Streamer t({"--poll-ms", "5", (dir_ / "no-such-run" / "events.jsonl").string()});
  t.next();
  EXPECT_EQ(t.next().line, "N folder");
}

TEST_F(StreamCli, NotARegularFileIsAnErrorFrameAndExit1) {
  Streamer s({dir_.string()});
  s.next();
  EXPECT_EQ(s.next().line, "E " + dir_.string() + " is not a regular file");
  EXPECT_EQ(s.wait(), 1);
}

TEST_F(StreamCli, EndsOnStdinEof) {
  append(file_, "x\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  s.closeIn();
  EXPECT_EQ(s.wait(), 0);
}

TEST_F(StreamCli, EndsWhenItsOutputIsClosed) {
  append(file_, "x\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  s.closeOut();
  // Idle, it sees POLLERR on its stdout and exits 0 (a write would get SIGPIPE).
  EXPECT_EQ(s.wait(), 0);
}

TEST_F(StreamCli, EndsOnSighup) {
  append(file_, "x\n");
  Streamer s({"--poll-ms", "5", file_.string()});
  s.until("D");
  s.hangUp();
  EXPECT_EQ(s.wait(), 128 + SIGHUP);
}

TEST(StreamCliArgs, BadOptionsAreUsageErrors) {
  Outcome r = runOnce({"--offset", "-1", "/tmp/x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--offset: '-1' is not a byte offset"), std::string::npos) << r.err;
  r = runOnce({"--offset", "12x", "/tmp/x"});
  EXPECT_EQ(r.code, 2);
  r = runOnce({"--poll-ms", "0", "/tmp/x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--poll-ms: '0'"), std::string::npos) << r.err;
  r = runOnce({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("FILE is required"), std::string::npos) << r.err;
  r = runOnce({"/tmp/a", "/tmp/b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unexpected argument '/tmp/b'"), std::string::npos) << r.err;
  r = runOnce({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("flamingo-stream 1"), std::string::npos) << r.out;
}

}  // namespace

// flamingo-train version --json and probe host / clock / listen / connect: the
// real binary, real sockets on loopback, real directories.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backend/protocol/wire/events.h"

extern char** environ;

namespace {

namespace stdfs = std::filesystem;

const std::string kBin = std::string(FS_BINARY_DIR) + "/bin/flamingo-train";

struct Result {
  int code = -1;
  std::string out, err;
  nlohmann::json json() const { return nlohmann::json::parse(out, nullptr, false); }
};

std::string slurp(const stdfs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A socket for the tests' own listeners and port holders; closed on scope exit.
struct Socket {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  // Binds addr:0 (listening when asked) and returns the port.
  int bindAny(const char* addr, bool listen) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, addr, &a.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
    if (listen && ::listen(fd, 8) != 0) return -1;
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
};

class ProbeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() / ("fs_probe_cli_" + std::to_string(::getpid()) + "_" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    stdfs::permissions(dir_ / "ro", stdfs::perms::owner_all, ec);
    stdfs::remove_all(dir_);
  }

  // Runs flamingo-train with the arguments verbatim and waits for it; `path`: its PATH, when not empty.
  Result run(const std::vector<std::string>& args, const std::string& path = "") {
    const stdfs::path out = dir_ / "stdout", err = dir_ / "stderr";
    const pid_t pid = spawn(args, out.string(), err.string(), nullptr, path);
    int status = 0;
    ::waitpid(pid, &status, 0);
    children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  // Starts flamingo-train with stdout on a pipe (*outFd) and stderr in a file.
  pid_t spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err,
              int* outFd, const std::string& path = "") {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      if (path.empty() || std::string(*e).rfind("PATH=", 0) != 0) env.emplace_back(*e);
    }
    if (!path.empty()) env.push_back("PATH=" + path);
    std::vector<char*> cenv;
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    std::vector<std::string> argv = {kBin};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int pipefd[2] = {-1, -1};
    if (outFd) {
      EXPECT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
      posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    } else {
      posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    EXPECT_EQ(::posix_spawn(&pid, kBin.c_str(), &fa, nullptr, cargv.data(), cenv.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
    if (outFd) {
      ::close(pipefd[1]);
      *outFd = pipefd[0];
    }
    children_.push_back(pid);
    return pid;
  }

  // The first line on fd (a hang guard of 60 s).
  static std::string readLine(int fd) {
    std::string line;
    char c = 0;
    while (line.find('\n') == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 60'000) <= 0 || ::read(fd, &c, 1) != 1) break;
      line += c;
    }
    return line;
  }

  int waitExit(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  stdfs::path dir_;
  std::vector<pid_t> children_;
};

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(ProbeCli, VersionJsonHasEveryField) {
  Result r = run({"version", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = r.json();
  ASSERT_TRUE(j.is_object()) << r.out;
  for (const char* field : {"engine_version", "config_schema", "event_schema", "manifest_schema"})
    EXPECT_TRUE(j[field].is_string()) << field;
  EXPECT_EQ(j["event_schema"], std::string(fs::protocol::kEventSchemaVersion));
  EXPECT_EQ(j["protocol_major"], fs::protocol::kEventSchemaMajor);
  for (const char* field : {"cuda_build", "nccl", "cuda_device", "engine"})
    EXPECT_TRUE(j[field].is_boolean()) << field;
  ASSERT_TRUE(j["cuda_devices"].is_number_integer());
  EXPECT_EQ(j["cuda_devices"].get<int>() > 0, j["cuda_device"].get<bool>());
#ifdef FS_TEST_ENGINE
  EXPECT_TRUE(j["engine"].get<bool>());
  // The torch the engine was built against, as its own Python package says: version and CUDA.
  FILE* pipe =
      popen((std::string("'") + FS_PYTHON +
             "' -c 'import torch; print(torch.__version__.split(\"+\")[0], torch.version.cuda or \"none\")'")
                .c_str(),
            "r");
  ASSERT_NE(pipe, nullptr);
  char buf[256] = {};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, pipe);
  ASSERT_EQ(pclose(pipe), 0) << FS_PYTHON << " could not import torch";
  std::istringstream python(std::string(buf, n));
  std::string torchVersion, torchCuda;
  python >> torchVersion >> torchCuda;
  EXPECT_EQ(j["libtorch"], torchVersion);
  // NOTE [One BLAS]: LibTorch's matmuls and ours run on the BLAS inside libtorch_cpu, not on the
  // OpenBLAS that OpenCV brings into the same process.
  EXPECT_EQ(j["sgemm_library"], "libtorch_cpu.so") << j.dump();
  EXPECT_EQ(j["blas"], "mkl") << j.dump();
#ifdef FS_WITH_CUDA
  EXPECT_TRUE(j["cuda_build"].get<bool>());
  EXPECT_TRUE(j["nccl"].get<bool>());
  EXPECT_EQ(j["cuda_version"], torchCuda);
#else
  EXPECT_FALSE(j["cuda_build"].get<bool>());
  EXPECT_TRUE(j["cuda_version"].is_null());
#endif
#else
  EXPECT_FALSE(j["engine"].get<bool>());
  EXPECT_TRUE(j["libtorch"].is_null());
#endif
  // The text form stays; the help documents the fields.
  EXPECT_NE(run({"version"}).out.find("event schema"), std::string::npos);
  EXPECT_NE(run({"version", "--help"}).out.find("protocol_major"), std::string::npos);
  EXPECT_EQ(run({"version", "extra"}).code, 2);
}

TEST_F(ProbeCli, HostReportsTheMachineAndAWritableRunRoot) {
  const std::int64_t before = nowMs();
  Result r = run({"probe", "host", "--run-root", dir_.string()});
  const std::int64_t after = nowMs();
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = r.json();
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_FALSE(j["hostname"].get<std::string>().empty());
  EXPECT_GE(j["cores"]["online"].get<int>(), 1);
  EXPECT_GE(j["cores"]["usable"].get<int>(), 1);
  EXPECT_LE(j["cores"]["usable"].get<int>(), j["cores"]["online"].get<int>());
  EXPECT_GT(j["memory"]["total_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_LE(j["memory"]["available_bytes"].get<std::uint64_t>(),
            j["memory"]["total_bytes"].get<std::uint64_t>());
  const auto& rr = j["run_root"];
  EXPECT_EQ(rr["path"], dir_.string());
  EXPECT_TRUE(rr["exists"].get<bool>());
  EXPECT_TRUE(rr["writable"].get<bool>());
  EXPECT_EQ(rr["free_path"], dir_.string());
  EXPECT_TRUE(rr["free_bytes"].is_number_unsigned());
  EXPECT_FALSE(rr.contains("error"));
  EXPECT_TRUE(j["gpus"]["nvidia_smi"].is_boolean());
  EXPECT_TRUE(j["gpus"]["devices"].is_array());
  EXPECT_GE(j["unix_time_ms"].get<std::int64_t>(), before);
  EXPECT_LE(j["unix_time_ms"].get<std::int64_t>(), after);
  // The writability check leaves nothing behind.
  for (const auto& e : stdfs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind(".flamingo-probe", 0), std::string::npos) << e.path();

  Result clock = run({"probe", "clock"});
  ASSERT_EQ(clock.code, 0) << clock.err;
  EXPECT_GE(clock.json()["unix_time_ms"].get<std::int64_t>(), before);
}

// nvidia-smi's answer as an H200 machine gave it (2026-11-27); the script stands in for the driver's tool.
TEST_F(ProbeCli, HostListsTheGpusNvidiaSmiReports) {
  stdfs::create_directories(dir_ / "bin");
  const auto smi = dir_ / "bin" / "nvidia-smi";
  std::ofstream(smi)
      << "#!/bin/sh\n"
         "[ \"$*\" = \"--query-gpu=index,name,memory.total --format=csv,noheader,nounits\" ] || exit 9\n"
         "printf '0, NVIDIA H200, 143771\\n1, NVIDIA H200, 143771\\n'\n";
  stdfs::permissions(smi, stdfs::perms::owner_all);
  const std::string path = (dir_ / "bin").string() + ":/usr/bin:/bin";
  auto gpus = run({"probe", "host", "--run-root", dir_.string()}, path).json()["gpus"];
  EXPECT_TRUE(gpus["nvidia_smi"].get<bool>());
  EXPECT_FALSE(gpus.contains("error")) << gpus;
  ASSERT_EQ(gpus["devices"].size(), 2u) << gpus;
  EXPECT_EQ(gpus["devices"][1],
            (nlohmann::json{{"index", 1}, {"name", "NVIDIA H200"}, {"memory_total_mib", 143771}}));

  std::ofstream(smi) << "#!/bin/sh\necho 'NVIDIA-SMI has failed'\nexit 9\n";
  auto failed = run({"probe", "host", "--run-root", dir_.string()}, path).json()["gpus"];
  EXPECT_TRUE(failed["devices"].empty());
  EXPECT_EQ(failed["error"], "nvidia-smi exited with code 9: NVIDIA-SMI has failed") << failed;

  // Without nvidia-smi on PATH: no GPUs, and no error.
  auto none = run({"probe", "host", "--run-root", dir_.string()}, "/usr/bin:/bin").json()["gpus"];
  if (!stdfs::exists("/usr/bin/nvidia-smi") && !stdfs::exists("/bin/nvidia-smi")) {
    EXPECT_FALSE(none["nvidia_smi"].get<bool>());
    EXPECT_TRUE(none["devices"].empty());
    EXPECT_FALSE(none.contains("error"));
  }
}

TEST_F(ProbeCli, HostMissingRunRootMeasuresTheNearestParent) {
  const std::string missing = (dir_ / "a" / "b").string();
  auto rr = run({"probe", "host", "--run-root", missing}).json()["run_root"];
  EXPECT_EQ(rr["path"], missing);
  EXPECT_FALSE(rr["exists"].get<bool>());
  EXPECT_EQ(rr["free_path"], dir_.string());
  EXPECT_TRUE(rr["writable"].get<bool>());
  EXPECT_FALSE(stdfs::exists(dir_ / "a"));
}

TEST_F(ProbeCli, HostUnwritableRunRoots) {
  // /proc takes no new files, even from root.
  auto proc = run({"probe", "host", "--run-root", "/proc"}).json()["run_root"];
  EXPECT_TRUE(proc["exists"].get<bool>());
  EXPECT_FALSE(proc["writable"].get<bool>());
  EXPECT_NE(proc["error"].get<std::string>().find("cannot create a file in /proc"), std::string::npos)
      << proc;
  // A file is no run root.
  std::ofstream(dir_ / "file") << "x";
  auto file = run({"probe", "host", "--run-root", (dir_ / "file").string()}).json()["run_root"];
  EXPECT_FALSE(file["writable"].get<bool>());
  EXPECT_NE(file["error"].get<std::string>().find("is not a directory"), std::string::npos) << file;
  // A read-only directory (root may write anyway: only checked for other users).
  if (::geteuid() != 0) {
    stdfs::create_directories(dir_ / "ro");
    stdfs::permissions(dir_ / "ro", stdfs::perms::owner_read | stdfs::perms::owner_exec);
    auto ro = run({"probe", "host", "--run-root", (dir_ / "ro").string()}).json()["run_root"];
    EXPECT_FALSE(ro["writable"].get<bool>());
    EXPECT_NE(ro["error"].get<std::string>().find("Permission denied"), std::string::npos) << ro;
  }
}

TEST_F(ProbeCli, ListenAnswersConnect) {
  int outFd = -1;
  const pid_t listener =
      spawn({"probe", "listen", "--port", "0", "--nonce", "n1", "--timeout-s", "60", "--connections", "1"},
            "", (dir_ / "listen.err").string(), &outFd);
  auto first = nlohmann::json::parse(readLine(outFd), nullptr, false);
  ASSERT_TRUE(first.is_object()) << slurp(dir_ / "listen.err");
  EXPECT_TRUE(first["listening"].get<bool>());
  const int port = first["port"].get<int>();
  ASSERT_GT(port, 0);
  Result r = run({"probe", "connect", "--host", "127.0.0.1", "--port", std::to_string(port), "--nonce", "n1",
                  "--timeout-s", "30"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = r.json();
  EXPECT_TRUE(j["reachable"].get<bool>()) << r.out;
  EXPECT_EQ(j["host"], "127.0.0.1");
  EXPECT_EQ(j["port"], port);
  EXPECT_FALSE(j.contains("error"));
  // One answered connection was asked for: the listener is done, and says so.
  const auto end = nlohmann::json::parse(readLine(outFd), nullptr, false);
  ::close(outFd);
  EXPECT_EQ(end, (nlohmann::json{{"listening", true}, {"port", port}, {"answered", 1}}));
  EXPECT_EQ(waitExit(listener), 0);
}

TEST_F(ProbeCli, ListenChecksItsOwnAddress) {
  Result r = run({"probe", "listen", "--port", "0", "--nonce", "s1", "--timeout-s", "60", "--connections",
                  "1", "--self-check", "127.0.0.1"});
  EXPECT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, last;
  std::getline(lines, first);
  std::getline(lines, last);
  const auto listening = nlohmann::json::parse(first, nullptr, false);
  const auto end = nlohmann::json::parse(last, nullptr, false);
  ASSERT_TRUE(end.is_object()) << r.out;
  EXPECT_EQ(end["port"], listening["port"]);
  EXPECT_EQ(end["answered"], 1);
  EXPECT_TRUE(end["self_check"]["reachable"].get<bool>()) << r.out;
  EXPECT_EQ(end["self_check"]["host"], "127.0.0.1");

  // An address of this host where the listener (IPv4 only) is not: refused.
  std::ifstream inet6("/proc/net/if_inet6");
  const std::string addresses((std::istreambuf_iterator<char>(inet6)), std::istreambuf_iterator<char>());
  if (addresses.find("00000000000000000000000000000001") == std::string::npos) return;
  Result v6 = run({"probe", "listen", "--port", "0", "--nonce", "s1", "--timeout-s", "60", "--connections",
                   "1", "--self-check", "::1"});
  EXPECT_EQ(v6.code, 0) << v6.err;
  const auto self = nlohmann::json::parse(v6.out.substr(v6.out.find('\n') + 1), nullptr, false)["self_check"];
  EXPECT_FALSE(self["reachable"].get<bool>()) << v6.out;
  EXPECT_NE(self["error"].get<std::string>().find("connection refused"), std::string::npos) << v6.out;
}

TEST_F(ProbeCli, ConnectTellsAnotherCheckByItsNonce) {
  int outFd = -1;
  spawn({"probe", "listen", "--port", "0", "--nonce", "mine", "--timeout-s", "60"}, "",
        (dir_ / "listen.err").string(), &outFd);
  auto first = nlohmann::json::parse(readLine(outFd), nullptr, false);
  ::close(outFd);
  ASSERT_TRUE(first.is_object());
  Result r = run({"probe", "connect", "--host", "localhost", "--port",
                  std::to_string(first["port"].get<int>()), "--nonce", "theirs", "--timeout-s", "30"});
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(r.json()["reachable"].get<bool>());
  EXPECT_NE(r.json()["error"].get<std::string>().find("another check"), std::string::npos) << r.out;
}

TEST_F(ProbeCli, ListenOnAPortInUseFails) {
  Socket holder;
  const int port = holder.bindAny("0.0.0.0", /*listen=*/true);
  ASSERT_GT(port, 0);
  Result r = run({"probe", "listen", "--port", std::to_string(port), "--nonce", "x", "--timeout-s", "5"});
  EXPECT_EQ(r.code, 1);
  auto j = r.json();
  EXPECT_FALSE(j["listening"].get<bool>()) << r.out;
  EXPECT_EQ(j["port"], port);
  EXPECT_NE(j["error"].get<std::string>().find("port " + std::to_string(port) + " is in use"),
            std::string::npos);
  EXPECT_NE(r.err.find("is in use"), std::string::npos) << r.err;
}

TEST_F(ProbeCli, ConnectToNothingIsRefused) {
  Socket bound;  // bound, never listening: connections to it are refused
  const int port = bound.bindAny("127.0.0.1", /*listen=*/false);
  ASSERT_GT(port, 0);
  Result r = run({"probe", "connect", "--host", "127.0.0.1", "--port", std::to_string(port), "--nonce", "x",
                  "--timeout-s", "30"});
  EXPECT_EQ(r.code, 1);
  auto j = r.json();
  EXPECT_FALSE(j["reachable"].get<bool>());
  EXPECT_EQ(j["error"], "connection refused: nothing listens on 127.0.0.1:" + std::to_string(port));
}

TEST_F(ProbeCli, ConnectToAnotherServiceIsNotAProbe) {
  Socket server;
  const int port = server.bindAny("127.0.0.1", /*listen=*/true);
  ASSERT_GT(port, 0);
  std::thread answer([&] {
    const int conn = ::accept(server.fd, nullptr, nullptr);
    if (conn < 0) return;
    const std::string banner = "SSH-2.0-OpenSSH_9.2\r\n";
    (void)::send(conn, banner.data(), banner.size(), MSG_NOSIGNAL);
    ::close(conn);
  });
  Result r = run({"probe", "connect", "--host", "127.0.0.1", "--port", std::to_string(port), "--nonce", "x",
                  "--timeout-s", "30"});
  answer.join();
  EXPECT_EQ(r.code, 1);
  const std::string error = r.json()["error"].get<std::string>();
  EXPECT_NE(error.find("not a flamingo-train probe"), std::string::npos) << error;
  EXPECT_NE(error.find("SSH-2.0-OpenSSH_9.2"), std::string::npos) << error;
}

TEST_F(ProbeCli, UsageErrors) {
  EXPECT_EQ(run({"probe", "--help"}).code, 0);
  EXPECT_NE(run({"probe", "--help"}).out.find("usage: flamingo-train probe"), std::string::npos);
  EXPECT_EQ(run({"probe"}).code, 2);
  Result bogus = run({"probe", "bogus"});
  EXPECT_EQ(bogus.code, 2);
  EXPECT_NE(bogus.err.find("unknown probe 'bogus'"), std::string::npos);
  EXPECT_EQ(run({"probe", "host"}).code, 2);
  Result wrong = run({"probe", "host", "--run-root", "/tmp", "--port", "1"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("host: --port does not apply"), std::string::npos) << wrong.err;
  EXPECT_EQ(run({"probe", "listen", "--port", "0"}).code, 2);  // no nonce
  EXPECT_EQ(run({"probe", "listen", "--port", "0", "--nonce", "a b"}).code, 2);
  EXPECT_EQ(run({"probe", "connect", "--host", "h", "--port", "0", "--nonce", "a"}).code, 2);
  EXPECT_EQ(run({"probe", "connect", "--host", "h", "--port", "70000", "--nonce", "a"}).code, 2);
}

}  // namespace

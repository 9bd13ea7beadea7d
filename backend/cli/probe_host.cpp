#include "backend/cli/probe_host.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace fs::cli {
namespace {

namespace stdfs = std::filesystem;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

nlohmann::json cores() {
  nlohmann::json j;
  j["online"] = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    j["usable"] = CPU_COUNT(&set);
  } else {
    j["usable"] = nullptr;
  }
  return j;
}

// MemTotal and MemAvailable from /proc/meminfo (kB there), in bytes; null when unknown.
nlohmann::json memory() {
  nlohmann::json j = {{"total_bytes", nullptr}, {"available_bytes", nullptr}};
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemTotal:") j["total_bytes"] = kb * 1024;
    if (key == "MemAvailable:") j["available_bytes"] = kb * 1024;
  }
  return j;
}

// Creates and removes a temporary file in `dir`: the one test that also holds for
// root (who passes every permission check), read-only mounts and quotas.
std::string tryWrite(const std::string& dir) {
  std::string templ = (stdfs::path(dir) / ".flamingo-probe-XXXXXX").string();
  const int fd = ::mkstemp(templ.data());
  if (fd < 0) return "cannot create a file in " + dir + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(templ.c_str());
  return "";
}

// NOTE [Probing a run root that does not exist yet]: the launch creates the run
// root (mkdir -p), so a missing one is not an error by itself. Free space and
// writability are then those of the nearest existing parent, named in free_path;
// "writable" means a directory can be made there.
nlohmann::json runRoot(const std::string& path) {
  nlohmann::json j;
  j["path"] = path;
  std::error_code ec;
  const stdfs::path p(path.empty() ? "." : path);
  const auto st = stdfs::status(p, ec);
  const bool exists = stdfs::exists(st);
  j["exists"] = exists;
  std::string error;
  stdfs::path existing = p;
  if (exists && !stdfs::is_directory(st)) {
    error = path + " exists but is not a directory";
  } else if (!exists) {
    existing = p.parent_path();
    while (!existing.empty() && !stdfs::exists(existing, ec)) existing = existing.parent_path();
    if (existing.empty()) existing = p.is_absolute() ? stdfs::path("/") : stdfs::path(".");
    if (!stdfs::is_directory(existing, ec)) error = existing.string() + " is not a directory";
  }
  j["free_path"] = existing.string();
  if (error.empty()) error = tryWrite(existing.string());
  j["writable"] = error.empty();
  struct statvfs vfs {};
  if (::statvfs(existing.c_str(), &vfs) == 0) {
    j["free_bytes"] = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  } else {
    j["free_bytes"] = nullptr;
    if (error.empty())
      error = "cannot read the free space of " + existing.string() + ": " + std::strerror(errno);
  }
  if (!error.empty()) j["error"] = error;
  return j;
}

// "0, NVIDIA H100 80GB HBM3, 81559" lines.
nlohmann::json gpus() {
  nlohmann::json j = {{"nvidia_smi", false}, {"devices", nlohmann::json::array()}};
  if (findInPath("nvidia-smi").empty()) return j;
  j["nvidia_smi"] = true;
  auto r =
      spawnAndWait({"nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"},
                   kNvidiaSmiTimeoutMs);
  if (!r) {
    j["error"] = r.status().message();
    return j;
  }
  if (r->timed_out || r->exit_code != 0) {
    j["error"] = r->timed_out
                     ? "nvidia-smi did not answer within " + std::to_string(kNvidiaSmiTimeoutMs / 1000) + " s"
                     : "nvidia-smi exited with code " + std::to_string(r->exit_code) + ": " +
                           trim(r->out.substr(0, 200));
    return j;
  }
  std::istringstream lines(r->out);
  std::string line;
  while (std::getline(lines, line)) {
    if (trim(line).empty()) continue;
    const auto a = line.find(','), b = line.rfind(',');
    if (a == std::string::npos || a == b) {
      j["error"] = "unexpected nvidia-smi line '" + trim(line) + "'";
      continue;
    }
    nlohmann::json d;
    d["index"] = std::atoi(trim(line.substr(0, a)).c_str());
    d["name"] = trim(line.substr(a + 1, b - a - 1));
    const std::string mib = trim(line.substr(b + 1));
    d["memory_total_mib"] = mib.empty() || mib.find_first_not_of("0123456789") != std::string::npos
                                ? nlohmann::json(nullptr)
                                : nlohmann::json(std::stoull(mib));
    j["devices"].push_back(d);
  }
  return j;
}

}  // namespace

std::string findInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

protocol::StatusOr<SpawnResult> spawnAndWait(const std::vector<std::string>& argv, int timeout_ms) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return protocol::Status::ioError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return protocol::Status::ioError("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  SpawnResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{pipefd[0], POLLIN, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    const ssize_t got = ::read(pipefd[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    result.out.append(buf, static_cast<size_t>(got));
  }
  ::close(pipefd[0]);
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = !result.timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::int64_t unixTimeMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json probeHost(const std::string& run_root) {
  nlohmann::json j;
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  j["hostname"] = name;
  j["cores"] = cores();
  j["memory"] = memory();
  j["run_root"] = runRoot(run_root);
  j["gpus"] = gpus();
  j["unix_time_ms"] = unixTimeMs();
  return j;
}

}  // namespace fs::cli

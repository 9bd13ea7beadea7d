// Test helper: runs this test binary again as N rank processes (a worker
// test selected with --gtest_filter, its role in environment variables),
// waits for all of them with an upper bound, and returns their exit codes
// and output. Real processes on loopback; every child is killed and reaped
// before the helper returns.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fs::testing {

struct RankExit {
  int code = -1;       // exit code, or -1 when signalled / not finished
  int signal = 0;      // terminating signal
  std::string output;  // stdout + stderr
};

// A TCP port that was free a moment ago on loopback.
inline int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Spawns `argv` with the current environment plus `env`; output to `logPath`.
inline pid_t spawnWithEnv(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          const std::filesystem::path& logPath) {
  std::vector<std::string> envStrings;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key)) envStrings.push_back(kv);
  }
  for (const auto& [k, v] : env) envStrings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argvCopy = argv;
  for (auto& s : argvCopy) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Waits for every pid, at most `limit` in all; children still running then
// are killed (their RankExit says signal 9). Never returns with a child alive.
inline std::vector<RankExit> waitAll(const std::vector<pid_t>& pids,
                                     const std::vector<std::filesystem::path>& logs,
                                     std::chrono::seconds limit) {
  std::vector<RankExit> out(pids.size());
  std::vector<bool> done(pids.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = pids[i] > 0 ? ::waitpid(pids[i], &status, WNOHANG) : pids[i];
      if (r == 0) continue;
      done[i] = true;
      --left;
      if (r > 0 && WIFEXITED(status)) out[i].code = WEXITSTATUS(status);
      if (r > 0 && WIFSIGNALED(status)) out[i].signal = WTERMSIG(status);
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        ::kill(pids[i], SIGKILL);
        int status = 0;
        ::waitpid(pids[i], &status, 0);
        out[i].signal = SIGKILL;
        out[i].output = "[killed by the test after the time limit]\n";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    std::ifstream in(logs[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    out[i].output += ss.str();
  }
  return out;
}

}  // namespace fs::testing

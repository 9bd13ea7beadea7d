// The node agent's inputs (declared in node_agent.h): option checks, the rank command,
// the rank environment.
#include <array>
#include <cmath>
#include <string_view>

#include "backend/launch/node_agent.h"

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr std::array<std::string_view, 3> kSelfSubcommands = {"train", "demo", "replay"};
constexpr std::int64_t kMaxNodes = 100000;
constexpr std::int64_t kMaxProcPerNode = 4096;
constexpr std::int64_t kMaxRestarts = 1000;  // launch.max_restarts' range

bool isSelfSubcommand(std::string_view word) {
  for (auto s : kSelfSubcommands) {
    if (word == s) return true;
  }
  return false;
}

bool namesRunDir(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--run-dir" || a.starts_with("--run-dir=")) return true;
  }
  return false;
}

Status outOfRange(const char* option, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  return Status::invalidArgument(std::string(option) + " " + std::to_string(value) +
                                 " is out of range; expected " + std::to_string(lo) + ".." +
                                 std::to_string(hi));
}

}  // namespace

Status validateAgentOptions(const NodeAgentOptions& o) {
  if (o.nnodes < 1 || o.nnodes > kMaxNodes) return outOfRange("--nnodes", o.nnodes, 1, kMaxNodes);
  if (o.nprocPerNode < 1 || o.nprocPerNode > kMaxProcPerNode) {
    return outOfRange("--nproc-per-node", o.nprocPerNode, 1, kMaxProcPerNode);
  }
  if (o.nodeRank < 0 || o.nodeRank >= o.nnodes) {
    return Status::invalidArgument("--node-rank " + std::to_string(o.nodeRank) + " is not in 0.." +
                                   std::to_string(o.nnodes - 1) + " (--nnodes " + std::to_string(o.nnodes) +
                                   ")");
  }
  if (o.masterAddr.empty()) return Status::invalidArgument("--master-addr is empty");
  if (o.masterPort < 1 || o.masterPort > 65535) return outOfRange("--master-port", o.masterPort, 1, 65535);
  if (!std::isfinite(o.stopGraceS) || o.stopGraceS < 0 || o.stopGraceS > 86400) {
    return Status::invalidArgument("--stop-grace-s " + std::to_string(o.stopGraceS) +
                                   " is out of range; expected 0..86400 seconds");
  }
  if (o.maxRestarts < 0 || o.maxRestarts > kMaxRestarts) {
    return outOfRange("--max-restarts", o.maxRestarts, 0, kMaxRestarts);
  }
  if (o.runDir.empty()) return Status::invalidArgument("--run-dir is required");
  if (o.command.empty()) return Status::invalidArgument("no rank command: give it after '--'");
  return Status::ok();
}

StatusOr<RankCommand> resolveRankCommand(const NodeAgentOptions& o, const std::string& path_var) {
  if (o.command.empty()) return Status::invalidArgument("no rank command: give it after '--'");
  const auto& words = o.command;
  std::size_t first = 0;  // index of the subcommand when the rank is flamingo-train itself
  bool self = isSelfSubcommand(words[0]);
  if (!self && words.size() >= 2 && std::filesystem::path(words[0]).filename() == "flamingo-train" &&
      isSelfSubcommand(words[1])) {
    self = true;
    first = 1;
  }
  RankCommand c;
  if (!self) {
    auto program = findProgram(words[0], path_var);
    if (!program) return program.status();
    c.program = program.value();
    c.argv = words;
    return c;
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::canonical(o.selfExe, ec);
  if (ec)
    return Status::ioError("cannot find flamingo-train itself at " + o.selfExe.string() + ": " +
                           ec.message());
  c.program = exe.string();
  c.argv = {c.program};
  c.argv.insert(c.argv.end(), words.begin() + static_cast<long>(first), words.end());
  if (!namesRunDir(c.argv)) {
    c.argv.push_back("--run-dir");
    c.argv.push_back(std::filesystem::absolute(o.runDir, ec).string());
  }
  return c;
}

std::map<std::string, std::string> rankEnvironment(std::map<std::string, std::string> env,
                                                   const NodeAgentOptions& o, std::int64_t local_rank) {
  env["RANK"] = std::to_string(o.nodeRank * o.nprocPerNode + local_rank);
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["WORLD_SIZE"] = std::to_string(o.nnodes * o.nprocPerNode);
  env["LOCAL_WORLD_SIZE"] = std::to_string(o.nprocPerNode);
  env["GROUP_RANK"] = std::to_string(o.nodeRank);
  env["NODE_RANK"] = std::to_string(o.nodeRank);
  env["MASTER_ADDR"] = o.masterAddr;
  env["MASTER_PORT"] = std::to_string(o.masterPort);
  return env;
}

}  // namespace fs::launch

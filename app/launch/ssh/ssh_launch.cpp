#include "app/launch/ssh/ssh_launch.h"

#include <chrono>
#include <ctime>
#include <random>

#include "app/launch/run_config_upload.h"
#include "app/launch/ssh/remote_agent.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/config/launch_env.h"
#include "backend/protocol/config/run_location.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::app::cluster {
namespace {

using protocol::Status;
using protocol::StatusOr;

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string randomHex(int digits) {
  std::random_device rd;
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < digits; ++i) out += kHex[rd() & 15u];
  return out;
}

std::string utcStamp() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return stamp;
}

std::string join(const std::string& dir, std::string_view name) {
  return dir.ends_with('/') ? dir + std::string(name) : dir + "/" + std::string(name);
}

bool cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load();
}

// mkdir(1) of one directory: true when made, false when the name was taken.
StatusOr<bool> makeNewDir(remote::Host& host, const std::string& path) {
  auto r = host.run({"mkdir", "--", path});
  if (!r) return r.status();
  if (r->exit_code == 0) return true;
  auto st = host.stat(path);
  if (st) return false;  // taken (by a directory or anything else)
  return Status::ioError(host.name() + ": cannot create " + path + ": " + r->err);
}

// The absolute form of `root` on the host, creating it (mkdir -p) when missing.
StatusOr<std::string> absoluteDir(remote::Host& host, const std::string& root) {
  auto onHost = protocol::hostRunRoot(root);  // NOTE [A run root under ~]
  if (!onHost) return onHost.status();
  const std::string& path = onHost.value();
  if (Status s = host.makeDirs(path); !s) return s;
  auto r = host.run({"sh", "-c", "unset CDPATH; cd -- \"$1\" && pwd -P", "sh", path});
  if (!r) return r.status();
  std::string out = r->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (r->exit_code != 0 || out.empty() || out.front() != '/') {
    return Status::ioError(host.name() + ": cannot resolve run root " + path + ": " + r->err);
  }
  return out;
}

// Stops the agents already started (launch failed part-way): TERM by identity.
void stopStarted(const std::vector<std::shared_ptr<remote::Host>>& hosts,
                 const protocol::LaunchRecord& record) {
  for (const auto& n : record.nodes) {
    (void)signalAgent(*hosts[static_cast<std::size_t>(n.node_rank)], recordedAgent(n, record.run_dir),
                      "TERM");
  }
}

}  // namespace

std::string nodeName(const std::vector<std::string>& hosts, std::size_t i) {
  for (std::size_t j = 0; j < hosts.size(); ++j) {
    if (j != i && hosts[j] == hosts[i]) return hosts[i] + "-" + std::to_string(i);
  }
  return hosts[i];
}

// NOTE [Threads per rank]
// The engine sets LibTorch's intra-op threads from launch.threads_per_rank, but Debian's
// LibTorch does not pass that bound on to OpenBLAS, which then starts one thread per
// core in every rank. The environment is the one knob both read, so the agents get
// OMP_NUM_THREADS (inherited by their ranks) when the config sets a number.
// launch.env follows it (NOTE [Launch environment] in backend/protocol/config/launch_env.h):
// sshd gives the agents the login environment only, so what the ranks must see is exported
// here, after OMP_NUM_THREADS so that launch.env wins; the start script takes every entry
// as a positional parameter, quoted by the Host, never spliced into the script.
std::vector<std::string> agentEnvironment(const protocol::RunConfig& config) {
  std::vector<std::string> env;
  if (config.launch.threads_per_rank > 0)
    env.push_back("OMP_NUM_THREADS=" + std::to_string(config.launch.threads_per_rank));
  for (auto& kv : protocol::launchEnvAssignments(config.launch)) env.push_back(std::move(kv));
  return env;
}

std::vector<std::string> agentArgv(const SshLaunchPlan& plan, const std::string& runDir, std::size_t node) {
  const auto& l = plan.config.launch;
  std::vector<std::string> argv = {plan.engine,
                                   "launch",
                                   "--nnodes",
                                   std::to_string(l.nnodes),
                                   "--node-rank",
                                   std::to_string(node),
                                   "--nproc-per-node",
                                   std::to_string(l.nproc_per_node),
                                   "--master-addr",
                                   l.master_addr,
                                   "--master-port",
                                   std::to_string(l.master_port),
                                   "--run-dir",
                                   runDir,
                                   "--node-name",
                                   nodeName(l.hosts, node),
                                   "--max-restarts",
                                   std::to_string(l.max_restarts),
                                   "--",
                                   "train",
                                   "--config",
                                   join(runDir, protocol::kConfigFileName)};
  if (plan.allowPipe) argv.push_back("--allow-pipe");  // the agent passes the rank command on as it is
  return argv;
}

StatusOr<SshLaunchResult> launchOverSsh(const SshLaunchPlan& plan, const HostOpener& open,
                                        const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const auto& l = plan.config.launch;
  auto say = [&](const std::string& m) {
    if (progress) progress(m);
  };
  auto stopped = [] { return Status::ioError("launch cancelled"); };
  if (l.kind != "ssh") return Status::invalidArgument("launch.kind is '" + l.kind + "'; expected 'ssh'");
  if (l.hosts.empty() || static_cast<std::int64_t>(l.hosts.size()) != l.nnodes) {
    return Status::invalidArgument("launch.hosts lists " + std::to_string(l.hosts.size()) + " host(s) for " +
                                   std::to_string(l.nnodes) + " node(s)");
  }
  if (plan.runRoot.empty()) return Status::invalidArgument("no remote run root given");
  if (plan.engine.empty()) return Status::invalidArgument("no engine given (a path or 'flamingo-train')");

  SshLaunchResult result;
  std::vector<std::shared_ptr<remote::Host>> hosts;
  for (const auto& name : l.hosts) {
    if (cancelled(cancel)) return stopped();
    say("connecting to " + name);
    auto h = open(name);
    if (!h) return h.status();
    hosts.push_back(std::move(h.value()));
  }
  remote::Host& head = *hosts[0];

  // The run directory, made on node 0 with mkdir(1): an existing one is never reused.
  auto made = createRunDirectory(head, plan.runRoot, plan.runName);
  if (!made) return made.status();
  const std::string runDir = made.value();
  const std::string root = runDir.substr(0, runDir.rfind('/'));
  say(head.name() + ": run directory " + runDir);

  // NOTE [Shared run root]: the engine writes events.jsonl and run.json on node 0 only;
  // checkpoints of a multi-node run need every node's shards in one directory. A nonce
  // file written on node 0 and looked for on the others says whether they share it.
  bool shared = true;
  if (hosts.size() > 1) {
    const std::string probe = join(runDir, ".shared-" + randomHex(16));
    if (Status s = head.writeFileAtomic(probe, "flamingo-studio shared run root probe\n"); !s) return s;
    for (std::size_t i = 1; i < hosts.size(); ++i) {
      auto seen = hosts[i]->stat(probe);
      if (!seen && seen.status().code() != Status::Code::kNotFound) return seen.status();
      if (!seen) shared = false;
    }
    (void)head.remove(probe);
    result.record.shared_fs = shared;
    say(shared ? "run root " + root + " is shared by all nodes"
               : "run root " + root + " is not shared: each node keeps its own copy");
    if (!shared) {
      result.warnings.push_back(
          "the run root " + root +
          " is not on a shared file system: node 0 holds the events, each node its own rank logs and "
          "checkpoint shards; resuming this run needs them in one directory");
    }
  }
  std::vector<std::size_t> holders = {0};  // nodes that hold a copy of the run directory's files
  if (!shared) {
    for (std::size_t i = 1; i < hosts.size(); ++i) holders.push_back(i);
  }
  const std::string configText = protocol::dumpConfigYaml(plan.config, {.comments = true});
  protocol::RunManifest manifest;
  manifest.run_id = plan.config.name + "-" + utcStamp() + "-" + randomHex(4);
  manifest.created = nowMs();
  manifest.world_size = static_cast<int>(l.nnodes * l.nproc_per_node);
  manifest.nnodes = static_cast<int>(l.nnodes);
  manifest.nproc_per_node = static_cast<int>(l.nproc_per_node);
  manifest.hosts = l.hosts;
  manifest.launcher = protocol::LauncherKind::kSsh;
  manifest.state = protocol::RunState::kStarting;
  manifest.updated = manifest.created;
  for (std::size_t i : holders) {
    if (cancelled(cancel)) return stopped();
    remote::Host& h = *hosts[i];
    for (const char* sub : {"/control/done", "/logs"}) {
      if (Status s = h.makeDirs(runDir + sub); !s) return s;
    }
    say(h.name() + ": uploading config.yaml");
    if (Status s = writeRunConfig(h, runDir, configText); !s) return s;
    if (i == 0) {
      if (Status s = h.writeFileAtomic(join(runDir, protocol::kManifestFileName),
                                       protocol::encodeManifest(manifest));
          !s) {
        return s;
      }
    }
  }

  // One agent per node, node 0 first (its rank 0 hosts the rendezvous store).
  auto& record = result.record;
  record.launcher = protocol::LauncherKind::kSsh;
  record.run_dir = runDir;
  record.created = manifest.created;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (cancelled(cancel)) {
      stopStarted(hosts, record);
      return stopped();
    }
    const std::string log =
        join(runDir, std::string(protocol::kLogsDirName) + "/agent-" + nodeName(l.hosts, i) + ".log");
    say(hosts[i]->name() + ": starting node agent " + std::to_string(i));
    auto id =
        startDetached(*hosts[i], runDir, log, agentArgv(plan, runDir, i), agentEnvironment(plan.config));
    if (!id) {
      stopStarted(hosts, record);
      return Status::ioError("node " + std::to_string(i) + " (" + l.hosts[i] + "): " + id.status().message());
    }
    protocol::LaunchedNode node;
    node.node_rank = static_cast<int>(i);
    node.host = l.hosts[i];
    node.address = id->host_name.empty() ? l.hosts[i] : id->host_name;
    node.agent_pid = id->pid;
    node.boot_id = id->boot_id;
    node.start_ticks = id->start_ticks;
    node.started = nowMs();
    record.nodes.push_back(std::move(node));
  }
  const std::string recordText = protocol::encodeLaunchRecord(record);
  for (std::size_t i : holders) {
    if (Status s = hosts[i]->writeFileAtomic(join(runDir, protocol::kLaunchRecordFileName), recordText); !s) {
      result.warnings.push_back(
          hosts[i]->name() + ": launch.json not written (" + s.message() +
          "); the run goes on, but stop and kill from another client cannot check pids");
    }
  }
  say("started " + std::to_string(hosts.size()) + " node agent(s)");
  return result;
}

StatusOr<std::string> createRunDirectory(remote::Host& host, const std::string& runRoot,
                                         const std::string& runName) {
  auto root = absoluteDir(host, runRoot);
  if (!root) return root.status();
  for (int n = 1; n <= 1000; ++n) {
    const std::string candidate = join(root.value(), n == 1 ? runName : runName + "-" + std::to_string(n));
    auto made = makeNewDir(host, candidate);
    if (!made) return made.status();
    if (made.value()) return candidate;
  }
  return Status::invalidArgument(host.name() + ": 1000 run directories named " + runName + " exist under " +
                                 root.value() + "; choose another run name");
}

StatusOr<protocol::LaunchRecord> readLaunchRecord(remote::Host& host, const std::string& runDir) {
  const std::string path = join(runDir, protocol::kLaunchRecordFileName);
  auto text = host.readFile(path, 0, 1u << 20);
  if (!text) return text.status();
  return protocol::decodeLaunchRecord(text.value(), host.name() + ":" + path);
}

}  // namespace fs::app::cluster

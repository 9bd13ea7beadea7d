#include "backend/launch/world_env.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <initializer_list>

extern char** environ;

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

using Env = std::map<std::string, std::string>;

// One launcher's names for rank and world size.
struct Family {
  const char* source;
  const char* rank;
  const char* size;
};
constexpr std::array<Family, 4> kFamilies = {{
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"pmi", "PMI_RANK", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
}};
constexpr std::initializer_list<const char*> kLocalRankChain = {
    "LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};
constexpr std::initializer_list<const char*> kLocalWorldChain = {
    "LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
    "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr std::initializer_list<const char*> kNodeRankChain = {"GROUP_RANK", "NODE_RANK", "SLURM_NODEID",
                                                               "OMPI_COMM_WORLD_NODE_RANK"};

// A figure and where it came from, for messages: "RANK=3", "--rank 3", "3 (default)".
struct Figure {
  std::int64_t value = 0;
  std::string var;   // the variable, or "" when a flag or a default gave it
  std::string flag;  // the flag, when one gave it
  std::string origin() const {
    if (!var.empty()) return var + "=" + std::to_string(value);
    if (!flag.empty()) return flag + " " + std::to_string(value);
    return std::to_string(value) + " (default)";
  }
};

const std::string* lookup(const Env& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

const char* firstPresent(const Env& env, std::initializer_list<const char*> chain) {
  for (const char* name : chain) {
    if (lookup(env, name)) return name;
  }
  return nullptr;
}

// Reads variable `name` as a decimal integer in [min, max].
StatusOr<Figure> readNumber(const Env& env, const char* name, std::int64_t min,
                            std::int64_t max = INT32_MAX) {
  const std::string& text = *lookup(env, name);
  Figure f;
  f.var = name;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), f.value);
  bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || ec != std::errc() || p != text.data() + text.size() || f.value < min) {
    return Status::invalidArgument(std::string(name) + "='" + text + "' is not a " +
                                   (min > 0 ? "positive" : "non-negative") + " integer");
  }
  if (f.value > max) {
    return Status::invalidArgument(std::string(name) + "=" + text + " is out of range; expected " +
                                   std::to_string(min) + ".." + std::to_string(max));
  }
  return f;
}

// Combines an environment figure (if any) with a flag (if any): they must agree.
StatusOr<std::optional<Figure>> combine(std::optional<Figure> fromEnv,
                                        const std::optional<std::int64_t>& flag, const char* flagName) {
  if (!flag) return fromEnv;
  if (fromEnv && fromEnv->value != *flag) {
    return Status::invalidArgument(std::string(flagName) + " " + std::to_string(*flag) + " but " +
                                   fromEnv->origin() + "; a flag must agree with the environment it runs in");
  }
  if (fromEnv) return fromEnv;
  Figure f;
  f.value = *flag;
  f.flag = flagName;
  return std::optional<Figure>(f);
}

StatusOr<std::optional<Figure>> chainNumber(const Env& env, std::initializer_list<const char*> chain,
                                            std::int64_t min) {
  const char* name = firstPresent(env, chain);
  if (!name) return std::optional<Figure>();
  auto f = readNumber(env, name, min);
  if (!f) return f.status();
  return std::optional<Figure>(f.value());
}

// SLURM_(N)TASKS_PER_NODE "2(x3),1": this node's entry (by SLURM_NODEID when they differ).
StatusOr<Figure> slurmTasksPerNode(const Env& env, const char* name) {
  auto counts = parseSlurmTasksPerNode(*lookup(env, name));
  if (!counts) return Status::invalidArgument(std::string(name) + ": " + counts.status().message());
  Figure f;
  f.var = name;
  const auto& c = counts.value();
  bool uniform = std::all_of(c.begin(), c.end(), [&](std::int64_t n) { return n == c.front(); });
  if (uniform) {
    f.value = c.front();
    return f;
  }
  if (!lookup(env, "SLURM_NODEID")) {
    return Status::invalidArgument(
        std::string(name) + "=" + *lookup(env, name) +
        " differs between nodes but SLURM_NODEID is not set to pick this node's count");
  }
  auto node = readNumber(env, "SLURM_NODEID", 0);
  if (!node) return node.status();
  if (node->value >= static_cast<std::int64_t>(c.size())) {
    return Status::invalidArgument(node->origin() + " but " + name + "=" + *lookup(env, name) + " lists " +
                                   std::to_string(c.size()) + " nodes");
  }
  f.value = c[static_cast<std::size_t>(node->value)];
  return f;
}

StatusOr<std::optional<Figure>> localWorldFromEnv(const Env& env) {
  const char* name = firstPresent(env, kLocalWorldChain);
  if (!name) return std::optional<Figure>();
  std::string_view n = name;
  auto f = n.starts_with("SLURM_") ? slurmTasksPerNode(env, name) : readNumber(env, name, 1);
  if (!f) return f.status();
  return std::optional<Figure>(f.value());
}

// Rank and world size: one family, both present (SLURM_PROCID alone: a world of one).
struct RankAndSize {
  std::optional<Figure> rank, size;
  std::string source;
};
StatusOr<RankAndSize> rankAndSizeFromEnv(const Env& env) {
  const Family* rankFamily = nullptr;
  const Family* sizeFamily = nullptr;
  for (const Family& f : kFamilies) {
    if (!rankFamily && lookup(env, f.rank)) rankFamily = &f;
    if (!sizeFamily && lookup(env, f.size)) sizeFamily = &f;
  }
  RankAndSize out;
  if (rankFamily) {
    auto r = readNumber(env, rankFamily->rank, 0);
    if (!r) return r.status();
    out.rank = r.value();
    out.source = rankFamily->source;
  }
  if (sizeFamily) {
    auto s = readNumber(env, sizeFamily->size, 1);
    if (!s) return s.status();
    out.size = s.value();
  }
  if (rankFamily && sizeFamily && rankFamily != sizeFamily) {
    return Status::invalidArgument(out.rank->origin() + " is set but " + rankFamily->size + " is not (" +
                                   out.size->origin() + " is another launcher's); " + rankFamily->rank +
                                   " and " + rankFamily->size + " come together");
  }
  if (rankFamily && !sizeFamily && std::string_view(rankFamily->source) != "slurm") {
    return Status::invalidArgument(out.rank->origin() + " is set but " + rankFamily->size + " is not; " +
                                   rankFamily->rank + " and " + rankFamily->size + " come together");
  }
  if (!rankFamily && sizeFamily) {
    return Status::invalidArgument(
        out.size->origin() + " is set but " + sizeFamily->rank + " is not; " + sizeFamily->rank + " and " +
        sizeFamily->size + " come together" +
        (std::string_view(sizeFamily->source) == "slurm"
             ? " (start the ranks with srun, or with torchrun / flamingo-train launch)"
             : ""));
  }
  return out;
}

StatusOr<std::string> masterAddress(const Env& env, const WorldFlags& flags, const Figure& world) {
  if (const std::string* addr = lookup(env, "MASTER_ADDR")) {
    if (addr->empty()) return Status::invalidArgument("MASTER_ADDR is set but empty");
    if (flags.masterAddr && *flags.masterAddr != *addr) {
      return Status::invalidArgument("--master-addr " + *flags.masterAddr + " but MASTER_ADDR=" + *addr +
                                     "; a flag must agree with the environment it runs in");
    }
    return *addr;
  }
  if (flags.masterAddr) {
    if (flags.masterAddr->empty()) return Status::invalidArgument("--master-addr is empty");
    return *flags.masterAddr;
  }
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    const std::string* list = lookup(env, name);
    if (!list) continue;
    auto hosts = expandSlurmHostlist(*list);
    if (!hosts) return Status::invalidArgument(std::string(name) + ": " + hosts.status().message());
    if (hosts->empty()) return Status::invalidArgument(std::string(name) + " is set but names no host");
    return hosts->front();
  }
  if (world.value > 1) {
    return Status::invalidArgument(
        "world size " + world.origin() +
        " but no master address: set MASTER_ADDR (or --master-addr) to rank 0's host");
  }
  return std::string("127.0.0.1");
}

}  // namespace

StatusOr<WorldInfo> discoverWorld(const Env& env, const WorldFlags& flags) {
  auto fromEnv = rankAndSizeFromEnv(env);
  if (!fromEnv) return fromEnv.status();
  auto rank = combine(fromEnv->rank, flags.rank, "--rank");
  if (!rank) return rank.status();
  auto size = combine(fromEnv->size, flags.worldSize, "--world-size");
  if (!size) return size.status();
  bool slurmBatch = fromEnv->source == "slurm" && !fromEnv->size;
  if (rank->has_value() != size->has_value() && !slurmBatch) {
    return Status::invalidArgument(rank->has_value() ? rank->value().origin() + " given without --world-size"
                                                     : size->value().origin() + " given without --rank");
  }
  WorldInfo w;
  w.host = localHostName();
  w.source = !fromEnv->source.empty() ? fromEnv->source : rank->has_value() ? "flags" : "single";
  Figure rankF = rank->value_or(Figure{}), sizeF = size->value_or(Figure{1, "", ""});
  if (rankF.value >= sizeF.value) {
    return Status::invalidArgument("rank " + rankF.origin() + " is not below the world size " +
                                   sizeF.origin());
  }

  auto localEnv = chainNumber(env, kLocalRankChain, 0);
  if (!localEnv) return localEnv.status();
  auto localRank = combine(localEnv.value(), flags.localRank, "--local-rank");
  if (!localRank) return localRank.status();
  auto localWorldEnv = localWorldFromEnv(env);
  if (!localWorldEnv) return localWorldEnv.status();
  auto localWorld = combine(localWorldEnv.value(), flags.localWorldSize, "--local-world-size");
  if (!localWorld) return localWorld.status();
  Figure localRankF = localRank->value_or(Figure{});
  Figure localWorldF = localWorld->value_or(Figure{localRank->has_value() ? sizeF.value : 1, "", ""});
  if (localRankF.value >= localWorldF.value) {
    return Status::invalidArgument("local rank " + localRankF.origin() +
                                   " is not below the local world size " + localWorldF.origin());
  }
  if (localWorldF.value > sizeF.value) {
    return Status::invalidArgument("local world size " + localWorldF.origin() +
                                   " is larger than the world size " + sizeF.origin());
  }

  auto nodeRank = chainNumber(env, kNodeRankChain, 0);
  if (!nodeRank) return nodeRank.status();

  auto master = masterAddress(env, flags, sizeF);
  if (!master) return master.status();
  std::optional<Figure> portEnv;
  if (lookup(env, "MASTER_PORT")) {
    auto p = readNumber(env, "MASTER_PORT", 1, 65535);
    if (!p) return p.status();
    portEnv = p.value();
  }
  if (flags.masterPort && (*flags.masterPort < 1 || *flags.masterPort > 65535)) {
    return Status::invalidArgument("--master-port " + std::to_string(*flags.masterPort) +
                                   " is out of range; expected 1..65535");
  }
  auto port = combine(portEnv, flags.masterPort, "--master-port");
  if (!port) return port.status();

  w.rank = rankF.value;
  w.worldSize = sizeF.value;
  w.localRank = localRankF.value;
  w.localWorldSize = localWorldF.value;
  w.nodeRank = nodeRank->has_value() ? nodeRank->value().value : w.rank / w.localWorldSize;
  w.masterAddr = master.value();
  w.masterPort = port->has_value() ? port->value().value : kDefaultMasterPort;
  return w;
}

std::vector<std::string_view> worldVariableNames() {
  std::vector<std::string_view> names;
  auto add = [&names](std::string_view name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const Family& f : kFamilies) {
    add(f.rank);
    add(f.size);
  }
  for (const auto& chain : {kLocalRankChain, kLocalWorldChain, kNodeRankChain}) {
    for (const char* name : chain) add(name);
  }
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) add(name);
  return names;
}

std::map<std::string, std::string> currentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::string localHostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace fs::launch

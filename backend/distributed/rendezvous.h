// Joining a run: the store at MASTER_ADDR:MASTER_PORT (rank 0 serves it,
// store_server.h; under torchrun, torchrun's TCPStore), the pre-flight
// check, and the world's host and device groups (NOTE [Host and device
// groups] in groups.h).
//
// NOTE [Pre-flight]: multi-node OpenFlamingo runs hang at start-up when one
// node has the wrong MASTER_ADDR, with no word of which node is missing.
// Here every rank first posts "host, pid, identity" under preflight/<rank>
// in the store and waits, with the pre-flight timeout, until every rank has
// posted. On timeout the error lists the ranks that never joined (with the
// node each one belongs to by the nproc-per-node layout) and where the
// others joined from. A rank that cannot reach the store at all says so,
// naming MASTER_ADDR and MASTER_PORT. Identities (engine version + config
// hash) must agree: a rank running another build or config is named. Only
// then are the process groups created, each confirmed with one all-reduce.
//
// Thread-safety: call once per process, from the training thread.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/distributed/communicator.h"
#include "backend/distributed/groups.h"
#include "backend/distributed/store_server.h"
#include "backend/protocol/status.h"

namespace fs::distributed {

struct RendezvousOptions {
  int rank = 0;
  int world = 1;
  int localWorld = 1;  // ranks per node (names the node of a missing rank)
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  // The device group's backend (NOTE [Host and device groups]): gloo (the host group is both) or nccl
  // (an NCCL group on cuda:<deviceIndex> beside the Gloo host group). The host group is always Gloo.
  std::string backend = "gloo";
  int deviceIndex = -1;  // nccl: the rank's CUDA device; -1: the current one
  std::chrono::milliseconds preflightTimeout{std::chrono::seconds(60)};
  std::chrono::milliseconds collectiveTimeout{std::chrono::minutes(10)};
  std::string identity;  // must be equal on every rank: engine version + config hash
  std::string host;      // this host's name, for messages
  // torchrun already serves a TCPStore at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank, rank 0 included, is a
  // c10d TCPStore client of it (that server and its binding are torchrun's). Our keys live under
  // "fs/<keyPrefix>/" so they never meet torchrun's, nor those of an earlier attempt
  // (TORCHELASTIC_RESTART_COUNT).
  bool launcherServesStore = false;
  std::string keyPrefix = "0";
  // The bounds of the store rank 0 serves (NOTE [Store bounds] in store_server.h); unset:
  // StoreLimits::forWorld(world).
  std::optional<StoreLimits> storeLimits;
  // Ranks of one node (by the localWorld layout) exchange the host group's
  // collectives through shared memory (shm_communicator.h).
  bool sharedMemory = true;
  uint64_t sharedMemoryArenaBytes = 64ull << 20;
};

// What a rank posted at pre-flight.
struct PeerInfo {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  std::string identity;
};

class Heartbeat;

// One rank's membership of the run. Keeps the store alive (rank 0 serves it:
// it must outlive every peer's use, so rank 0 keeps it until the end).
class Membership {
 public:
  ~Membership();
  // NOTE [Host and device groups]: both span the whole world; the same communicator with gloo.
  const RankGroups& groups() const { return groups_; }
  Communicator& host() { return *groups_.host; }
  Communicator& device() { return *groups_.device; }
  const std::vector<PeerInfo>& peers() const { return peers_; }
  Heartbeat& heartbeat() { return *heartbeat_; }

 private:
  friend protocol::StatusOr<std::unique_ptr<Membership>> joinRun(const RendezvousOptions& options);
  struct StoreHolder;
  Membership();
  std::unique_ptr<StoreHolder> store_;
  RankGroups groups_;
  std::vector<PeerInfo> peers_;
  std::unique_ptr<Heartbeat> heartbeat_;
};

// Rendezvous + pre-flight + process groups + heartbeat. Errors name the
// missing ranks, the unreachable address or the mismatching identities.
protocol::StatusOr<std::unique_ptr<Membership>> joinRun(const RendezvousOptions& options);

// The local address of the route to `host` (what peers can reach us at);
// "127.0.0.1" for loopback masters. Errors name the host.
protocol::StatusOr<std::string> localAddressToward(const std::string& host, int port);

}  // namespace fs::distributed

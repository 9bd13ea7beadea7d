#include "backend/distributed/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "backend/distributed/error_text.h"
#include "backend/distributed/heartbeat.h"
#include "backend/distributed/process_group_communicator.h"
#include "backend/distributed/store_client.h"
#include "backend/distributed/store_server.h"

namespace fs::distributed {

using protocol::Status;

struct Membership::StoreHolder {
  std::unique_ptr<StoreServer> server;  // rank 0's, unless the launcher serves the store
  c10::intrusive_ptr<c10d::Store> store;
};

Membership::Membership() = default;
Membership::~Membership() {
  heartbeat_.reset();
  groups_ = {};
}

namespace {

std::string bytesToString(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

PeerInfo parsePeer(int rank, const std::string& text) {
  PeerInfo p;
  p.rank = rank;
  const auto t1 = text.find('\t');
  const auto t2 = text.find('\t', t1 == std::string::npos ? t1 : t1 + 1);
  p.host = text.substr(0, t1);
  if (t1 != std::string::npos && t2 != std::string::npos) {
    p.pid = std::strtoll(text.substr(t1 + 1, t2 - t1 - 1).c_str(), nullptr, 10);
    p.identity = text.substr(t2 + 1);
  }
  return p;
}

std::string nodeOf(int rank, int localWorld) {
  return "node " + std::to_string(rank / std::max(1, localWorld));
}

// NOTE [Pre-flight] in rendezvous.h.
Status preflight(c10d::Store& store, const RendezvousOptions& o, std::vector<PeerInfo>* peers) {
  const std::string mine = o.host + "\t" + std::to_string(::getpid()) + "\t" + o.identity;
  store.set("preflight/" + std::to_string(o.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> keys;
  for (int r = 0; r < o.world; ++r) keys.push_back("preflight/" + std::to_string(r));
  const auto deadline = std::chrono::steady_clock::now() + o.preflightTimeout;
  while (!store.check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string missing, joined;
      for (int r = 0; r < o.world; ++r) {
        const std::string k = "preflight/" + std::to_string(r);
        if (store.check({k})) {
          const PeerInfo p = parsePeer(r, bytesToString(store.get(k)));
          joined += (joined.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " on " + p.host);
        } else {
          missing += (missing.empty() ? "" : ", ") +
                     ("rank " + std::to_string(r) + " (" + nodeOf(r, o.localWorld) + ")");
        }
      }
      return Status::ioError("pre-flight: " + missing + " did not join the rendezvous at " + o.masterAddr +
                             ":" + std::to_string(o.masterPort) + " within " +
                             secondsText(o.preflightTimeout) + " (joined: " + joined +
                             "); check MASTER_ADDR / MASTER_PORT on those nodes and that they started");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  peers->clear();
  for (int r = 0; r < o.world; ++r) peers->push_back(parsePeer(r, bytesToString(store.get(keys[r]))));
  std::string mismatch;
  for (const auto& p : *peers) {
    if (p.identity != o.identity) {
      mismatch += (mismatch.empty() ? "" : "; ") +
                  ("rank " + std::to_string(p.rank) + " on " + p.host + " has '" + p.identity + "'");
    }
  }
  if (!mismatch.empty()) {
    return Status::invalidArgument("pre-flight: ranks disagree on engine version / config (rank " +
                                   std::to_string(o.rank) + " has '" + o.identity + "'): " + mismatch +
                                   "; every rank must run the same build with the same config");
  }
  return Status::ok();
}

}  // namespace

protocol::StatusOr<std::string> localAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0 || !res) {
    return Status::invalidArgument("MASTER_ADDR '" + host + "': cannot resolve it (" + gai_strerror(rc) +
                                   ")");
  }
  const auto* target = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  if ((ntohl(target->sin_addr.s_addr) >> 24) == 127) {
    ::freeaddrinfo(res);
    return std::string("127.0.0.1");
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  // A UDP connect sends nothing: it only asks the kernel for the route.
  const bool ok = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  ::freeaddrinfo(res);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  const bool named = ok && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!named) return Status::ioError("MASTER_ADDR '" + host + "': no route to it from this host");
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf);
  return std::string(buf);
}

protocol::StatusOr<std::unique_ptr<Membership>> joinRun(const RendezvousOptions& o) {
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) {
    return Status::invalidArgument("rank " + std::to_string(o.rank) + " is outside world size " +
                                   std::to_string(o.world));
  }
  if (o.masterPort < 1 || o.masterPort > 65535) {
    return Status::invalidArgument("MASTER_PORT " + std::to_string(o.masterPort) + " is not a TCP port");
  }
  std::unique_ptr<Membership> m(new Membership());
  m->store_ = std::make_unique<Membership::StoreHolder>();
  const std::string where = o.masterAddr + ":" + std::to_string(o.masterPort);
  // NOTE [Store binds one address] in store_server.h. Under torchrun the store is torchrun's own
  // c10d TCPStore (its server, its binding): every rank is a TCPStore client of it.
  std::string storeAddr = o.masterAddr;
  if (o.rank == 0 && !o.launcherServesStore) {
    // NOTE [Store bounds] in store_server.h: connections and bytes scale with the world.
    auto server = StoreServer::start(o.masterAddr, o.masterPort,
                                     o.storeLimits ? *o.storeLimits : StoreLimits::forWorld(o.world));
    if (!server) {
      return server.status().withMessage("rank 0 could not serve the rendezvous at " + where + ": " +
                                         server.status().message());
    }
    m->store_->server = std::move(server.value());
    storeAddr = m->store_->server->boundAddress();
  }
  auto connect = [&]() -> c10::intrusive_ptr<c10d::Store> {
    c10::intrusive_ptr<c10d::Store> client;
    if (o.launcherServesStore) {
      c10d::TCPStoreOptions so;
      so.port = static_cast<uint16_t>(o.masterPort);
      so.isServer = false;
      so.numWorkers = static_cast<size_t>(o.world);
      so.waitWorkers = false;  // the pre-flight waits, and names who is missing
      so.timeout = o.preflightTimeout;
      client = c10::make_intrusive<c10d::TCPStore>(o.masterAddr, so);
    } else {
      client = c10::make_intrusive<StoreClient>(storeAddr, o.masterPort, o.preflightTimeout);
    }
    return c10::make_intrusive<c10d::PrefixStore>("fs/" + o.keyPrefix, client);
  };
  try {
    m->store_->store = connect();
  } catch (const std::exception& e) {
    return Status::ioError(
        "rank " + std::to_string(o.rank) + " on " + o.host + " could not reach the rendezvous at " + where +
        " within " + secondsText(o.preflightTimeout) +
        ": MASTER_ADDR must be the address of rank 0's host and MASTER_PORT reachable from here (" +
        firstPart(e.what()) + ")");
  }
  try {
    if (Status s = preflight(*m->store_->store, o, &m->peers_); !s) return s;
  } catch (const std::exception& e) {
    return Status::ioError("pre-flight at " + where + " failed on rank " + std::to_string(o.rank) + ": " +
                           firstPart(e.what()));
  }
  auto bind = localAddressToward(o.masterAddr, o.masterPort);
  if (!bind) return bind.status();
  GroupOptions host;
  host.backend = "gloo";
  host.timeout = o.collectiveTimeout;
  host.bindAddress = bind.value();
  host.sharedMemory = o.sharedMemory;
  host.nodeKey = nodeOf(o.rank, o.localWorld) + " on " + o.host;
  host.sharedMemoryArenaBytes = o.sharedMemoryArenaBytes;
  try {
    // NOTE [Host and device groups] in groups.h.
    RankGroups& groups = m->groups_;
    groups.host = makeProcessGroupCommunicator(m->store_->store, "world/", o.rank, o.world, host);
    groups.device = groups.host;
    if (o.backend != "gloo") {
      GroupOptions device = host;
      device.backend = o.backend;
      device.sharedMemory = false;
      groups.device = makeProcessGroupCommunicator(m->store_->store, "device/", o.rank, o.world, device);
    }
    std::vector<const CollectiveTracker*> trackers{&groups.host->tracker()};
    if (!groups.shared()) trackers.push_back(&groups.device->tracker());
    auto heartbeatClient = connect();
    m->heartbeat_ = std::make_unique<Heartbeat>(heartbeatClient, o.rank, o.world, std::move(trackers),
                                                std::chrono::milliseconds(1000));
    Heartbeat* hb = m->heartbeat_.get();
    groups.host->setFailureDescriber([hb] { return hb->describePeers(); });
    if (!groups.shared()) groups.device->setFailureDescriber([hb] { return hb->describePeers(); });
    const auto confirm = [&](Communicator& group, const torch::Device& on, const std::string& what) {
      at::Tensor one = torch::ones({1}, torch::TensorOptions().dtype(torch::kInt64).device(on));
      group.allReduce(one, ReduceOp::kSum, what);
      const int64_t n = one.item<int64_t>();
      if (n == o.world) return Status::ok();
      return Status::ioError("pre-flight: the confirming all-reduce of the " + group.backendName() +
                             " group counted " + std::to_string(n) + " ranks, expected " +
                             std::to_string(o.world));
    };
    if (Status s = confirm(*groups.host, torch::kCPU, "pre-flight confirm"); !s) return s;
    if (!groups.shared()) {
      // NCCL: the rank's GPU (its communicator is created here, on the first collective).
      const torch::Device gpu(torch::kCUDA, static_cast<c10::DeviceIndex>(o.deviceIndex));
      if (Status s = confirm(*groups.device, gpu, "pre-flight confirm (device group)"); !s) return s;
    }
  } catch (const std::exception& e) {
    return Status::ioError(firstPart(e.what()));
  }
  return m;
}

}  // namespace fs::distributed

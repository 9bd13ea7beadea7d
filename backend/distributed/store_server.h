// The run's key-value store, served by a thread of rank 0's process (where
// c10d's TCPStore daemon used to run) on one address: MASTER_ADDR. Clients
// are StoreClient (store_client.h); the wire is NOTE [Store wire].
//
// NOTE [Store binds one address]: LibTorch 1.13's TCPStore server listens
// on every address of rank 0's host (TCPStoreOptions has no host for the
// server), so the unauthenticated store was reachable from every network
// the host is on. This server binds the address MASTER_ADDR names on rank
// 0's host: 127.0.0.1 serves loopback only; a host name binds the first
// address it resolves to (on rank 0's host) that is local; an address that
// is not one of this host's is refused with a message naming MASTER_ADDR.
// It binds with SO_REUSEADDR, as TCPStore does (app/cluster/preflight.cpp:
// connections closed just before must not keep the port in TIME_WAIT).
// The store has no authentication: docs/security.md says what that means.
//
// NOTE [Store bounds]: anyone who reaches the port can connect, and the
// hello (NOTE [Store wire]) checks only that the peer speaks our protocol (a
// fixed magic, no secret), so what such a peer can make rank 0 hold is
// bounded (StoreLimits; the figures are in backend/distributed/README.md):
//   - before its hello a connection is read at most kMaxHelloFrameBytes: a
//     first frame announcing more, or one that is not the hello, is refused
//     and the connection closed;
//   - at most maxPendingConnections connections wait for their hello: one
//     more drops the oldest of them (after reading what it sent); one that has not
//     completed its hello within helloTimeout is dropped. The ranks' clients
//     send the hello as soon as they connect, and StoreClient connects again
//     when its connection is dropped before the hello is answered;
//   - at most maxConnections connections past the hello: one more is refused
//     with an error naming the limit. Connections past the hello have no
//     idle timeout: a rank's client is silent for hours between pre-flight
//     and its next use, and a wait without timeout (c10d's kNoTimeout) is
//     legitimate, and StoreClient never reconnects after the hello;
//   - the keys and values held total at most maxStoreBytes: a set, add or
//     compareSet that would pass it is refused (kError naming the limit)
//     and the connection stays open;
//   - a wait on n keys (duplicates included) costs O(n) to register and to
//     end.
// Every drop and refusal is a log line naming the peer, the limit and the
// value (the first 8 of each kind, then every power of two).
//
// Behaviour: one thread polls the listening socket and every connection;
// requests are answered in order per connection. wait and get on a missing
// key are answered when the keys are set (c10d TCPStore's counting: a key
// deleted after it was counted stays counted) or at their deadline with
// the keys still missing. A frame over the limits of store_wire.h, a bad
// field or a connection that closes mid-message ends that connection only.
//
// Ownership and threads: the owner constructs it with start() and destroys
// it from one thread; the destructor stops the serving thread and joins it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "backend/protocol/status.h"

namespace fs::distributed {

// NOTE [Store bounds]. The defaults suit a run of up to 28 ranks; joinRun uses forWorld(world).
struct StoreLimits {
  // Connections that completed the hello (the ranks' clients: two per rank, more if a backend clones).
  int maxConnections = 256;
  // Connections that have not completed the hello yet.
  int maxPendingConnections = 64;
  // How long a connection may take from accept to a complete hello.
  std::chrono::milliseconds helloTimeout{std::chrono::seconds(10)};
  // Bytes of keys plus values the store holds at once.
  uint64_t maxStoreBytes = 64ull << 20;
  // Receives the store's log lines (drops and refusals), on the serving thread; null: standard error.
  std::function<void(const std::string&)> log;

  // The limits for a run of `world` ranks: 8 connections per rank + 32, and 64 MiB + 1 KiB per pair
  // of ranks (Gloo's groups take about 470 bytes per rank on LibTorch 2.11; the pairs leave room for
  // a backend whose rendezvous grows with them).
  static StoreLimits forWorld(int world);
};

class StoreServer {
 public:
  // Binds `masterAddr`:`port` (port 0: a free one, see port()) and starts
  // serving. Errors name MASTER_ADDR / MASTER_PORT and what is wrong.
  // REQUIRES: every limit > 0.
  static protocol::StatusOr<std::unique_ptr<StoreServer>> start(const std::string& masterAddr, int port,
                                                                StoreLimits limits = {});
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The numeric address it listens on ("127.0.0.1", "10.0.0.1", "::1").
  const std::string& boundAddress() const { return bound_; }
  int port() const { return port_; }
  // Requests (wait, get of a missing key) waiting for keys now. From any thread; for tests and
  // diagnostics.
  int blockedRequests() const;

  // What the serving thread holds now, and work it has done; from any thread, for tests and
  // diagnostics.
  struct Counters {
    int connections = 0;              // past the hello
    int pendingConnections = 0;       // accepted, hello not complete
    uint64_t storeBytes = 0;          // keys + values held
    uint64_t droppedBeforeHello = 0;  // refused, evicted or timed out before the hello
    uint64_t unregisterSteps = 0;     // waiting-list entries touched when waits ended
  };
  Counters counters() const;

 private:
  class Loop;
  StoreServer(std::unique_ptr<Loop> loop, std::string bound, int port);

  std::unique_ptr<Loop> loop_;
  std::string bound_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace fs::distributed

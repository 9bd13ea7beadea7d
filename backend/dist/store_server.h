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

#include <memory>
#include <string>
#include <thread>

#include "backend/protocol/status.h"

namespace fs::dist {

class StoreServer {
 public:
  // Binds `masterAddr`:`port` (port 0: a free one, see port()) and starts
  // serving. Errors name MASTER_ADDR / MASTER_PORT and what is wrong.
  static protocol::StatusOr<std::unique_ptr<StoreServer>> start(const std::string& masterAddr, int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The numeric address it listens on ("127.0.0.1", "10.0.0.1", "::1").
  const std::string& boundAddress() const { return bound_; }
  int port() const { return port_; }
  // Requests (wait, get of a missing key) waiting for keys now. From any thread; for tests and
  // diagnostics.
  int blockedRequests() const;

 private:
  class Loop;
  StoreServer(std::unique_ptr<Loop> loop, std::string bound, int port);

  std::unique_ptr<Loop> loop_;
  std::string bound_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace fs::dist

// `flamingo-train probe listen` and `probe connect`: is node 0's rendezvous
// port reachable from another node? The listener answers every connection with
// one line, "flamingo-probe <nonce>\n", so the connecting side can tell our
// probe from another service that happens to hold the port.
//
// Thread-safety: free functions, blocking; each owns its sockets.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace fs::cli {

// The line a listener sends, without the newline.
std::string probeGreeting(const std::string& nonce);
// Nonces are 1..64 characters of [A-Za-z0-9_.-]: they travel in a text line.
bool validNonce(const std::string& nonce);

struct ListenOptions {
  int port = 0;  // 0: any free port (the one bound is reported)
  std::string nonce;
  int timeout_s = 30;   // stop listening after this long
  int connections = 0;  // stop after this many answered connections; 0 = until the timeout
  // When set: once listening, connect to self_check_host:port from here too (the
  // ranks on node 0 reach MASTER_ADDR as well), as connectAndCheck does; counts as
  // one of `connections` (and, when it fails, is no longer waited for).
  std::string self_check_host;
};

// Binds 0.0.0.0:port and listens. `onListening` gets {"listening":true,"port":P}
// once the socket listens (the caller prints and flushes it); then every
// connection is answered until the timeout or the connection count.
// Returns {"listening":true,"port":P,"answered":N} at the end (with
// "self_check": connectAndCheck's object when asked), or
// {"listening":false,"port":P,"error":"..."} when the port cannot be bound.
nlohmann::json listenAndAnswer(const ListenOptions& options,
                               const std::function<void(const nlohmann::json&)>& onListening);

struct ConnectOptions {
  std::string host;
  int port = 0;
  std::string nonce;
  int timeout_s = 10;  // for the whole check: resolving, connecting (with retries), reading
  int wait_s =
      0;  // retry a refused connection for this long (within timeout_s: the listener may start later)
};

// {"reachable":true,"host":H,"port":P} or {"reachable":false,"host":H,"port":P,"error":"..."}.
nlohmann::json connectAndCheck(const ConnectOptions& options);

}  // namespace fs::cli

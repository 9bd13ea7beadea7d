#include "backend/distributed/store_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backend/distributed/error_text.h"
#include "backend/distributed/store_wire.h"

namespace fs::distributed {

using protocol::Status;
namespace wire = store_wire;
using Clock = std::chrono::steady_clock;

namespace {

// A wait longer than this is taken as this (a deadline must not overflow the clock).
constexpr int64_t kMaxWaitMs = 30LL * 24 * 3600 * 1000;
// After accept() ran out of descriptors, listen again this soon (or when a connection closes).
constexpr int kAcceptRetryMs = 100;

// 0.0.0.0 or :: (INADDR_ANY / in6addr_any).
bool isWildcard(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
  if (a->sa_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&in6);
  }
  return false;
}

std::string numericHost(const sockaddr* a, socklen_t len) {
  char host[NI_MAXHOST];
  if (::getnameinfo(a, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

// "10.0.0.5:41234", "[::1]:41234": the peer of an accepted connection, for log lines.
std::string peerOf(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "an unknown peer";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "an unknown peer";
  return a.ss_family == AF_INET6 ? "[" + std::string(host) + "]:" + port : std::string(host) + ":" + port;
}

}  // namespace

// Types of the serving thread's state (StoreServer::Loop holds them): a named namespace, as a
// class with external linkage must not hold types of an anonymous one (-Wsubobject-linkage once
// unity sources put this file inside another).
namespace serving {

// A request that blocks until its keys exist: kWait, or kGet on a missing key.
struct Waiter {
  bool active = false;
  bool isGet = false;
  std::string getKey;
  // The distinct keys that were missing, each registered once in waitingOn_ (NOTE [Store bounds]:
  // duplicates in a request cost nothing more when the wait ends).
  std::vector<std::string> registered;
  size_t missing = 0;  // registrations not yet met by a set
  std::optional<Clock::time_point> deadline;
};

struct Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;
  Clock::time_point acceptedAt;
  bool greeted = false;
  bool closed = false;
  std::string in;
  std::string out;
  size_t outPos = 0;
  Waiter waiter;

  bool sending() const { return outPos < out.size(); }
  bool blocked() const { return waiter.active || sending(); }
  // The most a frame's body may be: a hello's until the hello is complete.
  size_t bodyLimit() const { return greeted ? wire::kMaxFrameBytes : wire::kMaxHelloBodyBytes; }
  bool hasFrame() const {
    return in.size() >= wire::kHeaderBytes && (wire::bodyLength(in.data()) > bodyLimit() ||
                                               in.size() >= wire::kHeaderBytes + wire::bodyLength(in.data()));
  }
};

// The kinds of the store's log lines, each counted (NOTE [Store bounds]).
enum class Event { kHelloFlood, kNotOurs, kEvicted, kHelloTimeout, kTooManyConnections, kStoreFull, kCount };

}  // namespace serving

using serving::Conn;
using serving::Event;
using serving::Waiter;

namespace {

std::string okFrame() {
  return wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kOk)).frame();
}

// The integer a value of add() holds: decimal text, as c10d's stores keep it.
std::optional<int64_t> integerOf(const std::string& v) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

}  // namespace

// The serving thread's state; touched only by that thread, except stop().
class StoreServer::Loop {
 public:
  Loop(int listenFd, int wakeFd, StoreLimits limits, std::string where)
      : listenFd_(listenFd), wakeFd_(wakeFd), limits_(std::move(limits)), where_(std::move(where)) {}
  ~Loop() {
    for (auto& [id, c] : conns_) {
      if (!c.closed) ::close(c.fd);
    }
    ::close(listenFd_);
    ::close(wakeFd_);
  }
  void run();
  int blocked() const { return blocked_.load(); }
  Counters counters() const {
    Counters c;
    c.connections = greetedCount_.load();
    c.pendingConnections = pendingCount_.load();
    c.storeBytes = storeBytesSeen_.load();
    c.droppedBeforeHello = dropped_.load();
    c.unregisterSteps = unregisterSteps_.load();
    return c;
  }
  void stop() {
    stopping_.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wakeFd_, &one, sizeof one);
  }

 private:
  int timeoutMs(Clock::time_point now) const;
  void acceptAll();
  // Drops pending connections, oldest first, until one more fits under maxPendingConnections.
  void makeRoomForPending();
  void expirePending(Clock::time_point now);
  void readSome(Conn& c);
  void flush(Conn& c);
  void send(Conn& c, std::string frame);
  void refuse(Conn& c, const std::string& why);
  void closeConn(Conn& c);
  // A connection ended before its hello: a log line, counted; `why` is also sent when not empty.
  void dropBeforeHello(Conn& c, Event e, const std::string& logged, const std::string& why);
  void logEvent(Event e, const std::string& line);
  void serve(Conn& c);
  void handle(Conn& c, std::string_view body);
  void greet(Conn& c);
  // Whether `key` may hold `valueBytes` under maxStoreBytes; if not, answers c with an error and logs.
  bool fits(Conn& c, const char* op, const std::string& key, size_t valueBytes);
  void put(const std::string& key, std::string value);
  size_t erase(const std::string& key);
  void block(Conn& c, std::vector<std::string> keys, int64_t waitMs, bool isGet);
  void keySet(const std::string& key);
  void finish(Conn& c);
  // Ends c's waiter: removes c from waitingOn_; returns the keys it was still waiting for.
  std::vector<std::string> unregister(Conn& c);
  void expire(Clock::time_point now);

  int listenFd_;
  int wakeFd_;
  const StoreLimits limits_;
  const std::string where_;  // "host:port", for log lines
  std::atomic<bool> stopping_{false};
  std::atomic<int> blocked_{0};  // active waiters, read by blockedRequests()
  // Read by counters(); written by the serving thread only.
  std::atomic<int> greetedCount_{0};
  std::atomic<int> pendingCount_{0};
  std::atomic<uint64_t> storeBytesSeen_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> unregisterSteps_{0};
  bool acceptPaused_ = false;
  uint64_t nextId_ = 1;
  std::unordered_map<uint64_t, Conn> conns_;
  std::set<uint64_t> pending_;  // connections before their hello, oldest (lowest id) first
  uint64_t storeBytes_ = 0;     // keys + values in kv_
  uint64_t events_[static_cast<int>(Event::kCount)] = {};
  std::unordered_map<std::string, std::string> kv_;
  // missing key -> the connections waiting for it, each once
  std::unordered_map<std::string, std::unordered_set<uint64_t>> waitingOn_;
  std::vector<char> buf_ = std::vector<char>(64 << 10);
};

void StoreServer::Loop::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  while (!stopping_.load()) {
    fds.clear();
    ids.clear();
    fds.push_back({wakeFd_, POLLIN, 0});
    fds.push_back({listenFd_, static_cast<short>(acceptPaused_ ? 0 : POLLIN), 0});
    for (const auto& [id, c] : conns_) {
      // A blocked connection is not read: a client sends its next request only after the reply.
      short events = POLLRDHUP;
      if (c.sending()) events |= POLLOUT;
      if (!c.blocked()) events |= POLLIN;
      fds.push_back({c.fd, events, 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), timeoutMs(Clock::now())) < 0) {
      if (errno != EINTR) ::usleep(10000);  // ENOMEM: try again
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t v = 0;
      [[maybe_unused]] const auto n = ::read(wakeFd_, &v, sizeof v);
      continue;  // the loop condition sees stopping_
    }
    acceptPaused_ = false;
    if ((fds[1].revents & POLLIN) != 0) acceptAll();
    for (size_t i = 0; i < ids.size(); ++i) {
      Conn& c = conns_.at(ids[i]);
      const short re = fds[i + 2].revents;
      if (c.closed || re == 0) continue;
      if ((re & POLLOUT) != 0) flush(c);
      if (c.closed) continue;
      if ((re & POLLIN) != 0 && !c.blocked()) {
        readSome(c);
      } else if ((re & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0) {
        closeConn(c);  // gone: its waiter goes with it, the others are untouched
      }
    }
    expire(Clock::now());
    for (auto& [id, c] : conns_) {
      if (!c.closed) serve(c);
    }
    expirePending(Clock::now());  // after serve: a hello that arrived in time is answered
    for (auto it = conns_.begin(); it != conns_.end();) {
      it = it->second.closed ? conns_.erase(it) : std::next(it);
    }
  }
}

int StoreServer::Loop::timeoutMs(Clock::time_point now) const {
  int64_t ms = acceptPaused_ ? kAcceptRetryMs : -1;
  const auto until = [&](Clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int64_t clamped = std::clamp<int64_t>(left, 0, 1 << 30);
    ms = ms < 0 ? clamped : std::min(ms, clamped);
  };
  for (const auto& [id, c] : conns_) {
    if (!c.blocked() && c.hasFrame()) return 0;  // freed by a set in the last pass, with a request queued
    if (c.waiter.active && c.waiter.deadline) until(*c.waiter.deadline);
  }
  // The oldest pending connection's hello deadline is the first of them.
  if (!pending_.empty()) until(conns_.at(*pending_.begin()).acceptedAt + limits_.helloTimeout);
  return static_cast<int>(ms);
}

void StoreServer::Loop::acceptAll() {
  for (;;) {
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) acceptPaused_ = true;
      return;  // EAGAIN: none left; a connection aborted before accept: the next poll tells
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    makeRoomForPending();
    Conn c;
    c.id = nextId_++;
    c.fd = fd;
    c.peer = peerOf(fd);
    c.acceptedAt = Clock::now();
    pending_.insert(c.id);
    pendingCount_.store(static_cast<int>(pending_.size()));
    conns_.emplace(c.id, std::move(c));
  }
}

void StoreServer::Loop::makeRoomForPending() {
  while (!pending_.empty() && pending_.size() >= static_cast<size_t>(limits_.maxPendingConnections)) {
    Conn& oldest = conns_.at(*pending_.begin());
    // Its hello may be waiting in the socket, unread since the last poll: a rank that connected just
    // before a flood is greeted, not dropped.
    readSome(oldest);
    if (!oldest.closed) serve(oldest);
    if (oldest.closed || oldest.greeted) continue;
    dropBeforeHello(oldest, Event::kEvicted,
                    "dropped " + oldest.peer + " before its hello: " + std::to_string(pending_.size()) +
                        " connections were waiting for their hello, the limit (maxPendingConnections " +
                        std::to_string(limits_.maxPendingConnections) + "); it was the oldest",
                    "");
  }
}

void StoreServer::Loop::expirePending(Clock::time_point now) {
  while (!pending_.empty()) {
    Conn& oldest = conns_.at(*pending_.begin());
    if (oldest.acceptedAt + limits_.helloTimeout > now) return;
    dropBeforeHello(oldest, Event::kHelloTimeout,
                    "dropped " + oldest.peer + ": no complete hello within " +
                        secondsText(limits_.helloTimeout) + " (helloTimeout) of connecting (" +
                        std::to_string(oldest.in.size()) + " bytes received)",
                    "");
  }
}

void StoreServer::Loop::readSome(Conn& c) {
  // One chunk per pass: a connection's buffer grows by at most this much beyond the frame it is sending.
  // Before the hello, no more than a hello can need (NOTE [Store bounds]).
  const size_t room = c.greeted ? buf_.size() : wire::kMaxHelloFrameBytes - c.in.size();
  if (room == 0) return;  // unreachable: a full hello buffer holds a whole frame, which serve() answered
  const ssize_t n = ::recv(c.fd, buf_.data(), room, 0);
  if (n > 0) {
    c.in.append(buf_.data(), static_cast<size_t>(n));
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    closeConn(c);
  }
}

void StoreServer::Loop::flush(Conn& c) {
  while (c.sending()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.outPos, c.out.size() - c.outPos, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) closeConn(c);
      return;
    }
    c.outPos += static_cast<size_t>(n);
  }
  c.out.clear();
  c.outPos = 0;
}

void StoreServer::Loop::send(Conn& c, std::string frame) {
  c.out += frame;
  flush(c);
}

void StoreServer::Loop::refuse(Conn& c, const std::string& why) {
  // One try to say why, then the connection ends; the client reads the reason or a closed connection.
  const std::string frame = wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kError)).bytes(why).frame();
  [[maybe_unused]] const auto n = ::send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  closeConn(c);
}

void StoreServer::Loop::closeConn(Conn& c) {
  if (c.closed) return;
  if (c.waiter.active) unregister(c);
  if (c.greeted) {
    greetedCount_.fetch_sub(1);
  } else {
    pending_.erase(c.id);
    pendingCount_.store(static_cast<int>(pending_.size()));
  }
  ::close(c.fd);
  c.closed = true;
  c.in.clear();
  c.out.clear();
  c.outPos = 0;
  acceptPaused_ = false;  // a descriptor is free again
}

void StoreServer::Loop::logEvent(Event e, const std::string& line) {
  // The first 8 of each kind, then every power of two: a flood cannot flood the log.
  const uint64_t n = ++events_[static_cast<int>(e)];
  if (n > 8 && (n & (n - 1)) != 0) return;
  const std::string text =
      "store at " + where_ + ": " + line + (n > 8 ? " [" + std::to_string(n) + " such so far]" : "");
  if (limits_.log) {
    limits_.log(text);
  } else {
    std::fprintf(stderr, "flamingo-train: %s\n", text.c_str());
  }
}

void StoreServer::Loop::dropBeforeHello(Conn& c, Event e, const std::string& logged, const std::string& why) {
  logEvent(e, logged);
  dropped_.fetch_add(1);
  if (why.empty()) {
    closeConn(c);  // it said nothing: no answer either
  } else {
    refuse(c, why);
  }
}

void StoreServer::Loop::serve(Conn& c) {
  while (!c.closed && !c.blocked() && c.in.size() >= wire::kHeaderBytes) {
    const uint32_t n = wire::bodyLength(c.in.data());
    if (!c.greeted && n > wire::kMaxHelloBodyBytes) {
      const std::string what = "its first frame announces " + std::to_string(n) +
                               " bytes, over the hello's limit of " +
                               std::to_string(wire::kMaxHelloBodyBytes) + " bytes";
      dropBeforeHello(c, Event::kHelloFlood,
                      "dropped " + c.peer + " before its hello: " + what + " (after reading " +
                          std::to_string(c.in.size()) + " bytes)",
                      "this is a Flamingo store: a connection starts with \"" + std::string(wire::kMagic) +
                          "\", and " + what);
      return;
    }
    if (n > wire::kMaxFrameBytes) {
      refuse(c, "a request of " + std::to_string(n) + " bytes is over the store's limit of " +
                    std::to_string(wire::kMaxFrameBytes) + " bytes");
      return;
    }
    if (c.in.size() < wire::kHeaderBytes + n) return;
    handle(c, std::string_view(c.in).substr(wire::kHeaderBytes, n));
    if (!c.closed) c.in.erase(0, wire::kHeaderBytes + n);
  }
}

void StoreServer::Loop::handle(Conn& c, std::string_view body) {
  wire::Reader r(body);
  uint8_t opByte = 0;
  if (!r.u8(&opByte)) {
    if (!c.greeted)
      return dropBeforeHello(c, Event::kNotOurs, "dropped " + c.peer + ": an empty first frame",
                             "an empty request");
    return refuse(c, "an empty request");
  }
  const auto op = static_cast<wire::Op>(opByte);
  if (!c.greeted) {
    std::string magic;
    if (op != wire::Op::kHello || !r.bytes(&magic, wire::kMaxMagicBytes) || magic != wire::kMagic) {
      return dropBeforeHello(c, Event::kNotOurs,
                             "dropped " + c.peer + ": its first frame (" + std::to_string(body.size()) +
                                 " bytes) is not the store's hello",
                             "this is a Flamingo store: a connection starts with \"" +
                                 std::string(wire::kMagic) + "\" (is a c10d TCPStore client talking to it?)");
    }
    return greet(c);
  }
  std::string key, a, b;
  std::vector<std::string> keys;
  int64_t n = 0;
  const auto malformed = [&](const char* what) {
    refuse(c, std::string("a malformed ") + what + " request (a field truncated, or a key over " +
                  std::to_string(wire::kMaxKeyBytes) + " bytes, or a value over " +
                  std::to_string(wire::kMaxValueBytes) + " bytes)");
  };
  const auto ok = [] { return wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kOk)); };
  switch (op) {
    case wire::Op::kSet:
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.bytes(&a, wire::kMaxValueBytes) || !r.atEnd())
        return malformed("set");
      if (!fits(c, "set", key, a.size())) return;
      put(key, std::move(a));
      send(c, okFrame());
      return keySet(key);
    case wire::Op::kGet:
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.i64(&n) || !r.atEnd()) return malformed("get");
      if (auto it = kv_.find(key); it != kv_.end()) return send(c, ok().bytes(it->second).frame());
      return block(c, {key}, n, true);
    case wire::Op::kAdd: {
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.i64(&n) || !r.atEnd()) return malformed("add");
      int64_t sum = n;
      if (auto it = kv_.find(key); it != kv_.end()) {
        const auto have = integerOf(it->second);
        if (!have || __builtin_add_overflow(*have, n, &sum)) {
          const std::string why = !have ? "its value is not an integer" : "the sum overflows 64 bits";
          return send(c, wire::Writer()
                             .u8(static_cast<uint8_t>(wire::Reply::kError))
                             .bytes("add on key '" + key + "': " + why)
                             .frame());
        }
      }
      std::string text = std::to_string(sum);
      if (!fits(c, "add", key, text.size())) return;
      put(key, std::move(text));
      send(c, ok().i64(sum).frame());
      return keySet(key);
    }
    case wire::Op::kCompareSet: {
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.bytes(&a, wire::kMaxValueBytes) ||
          !r.bytes(&b, wire::kMaxValueBytes) || !r.atEnd())
        return malformed("compareSet");
      // c10d's semantics: a missing key is created only when `expected` is empty; otherwise the
      // answer is `expected` itself. A present key takes `desired` when it equals `expected`. The
      // answer is the value the key holds afterwards.
      auto it = kv_.find(key);
      if (it == kv_.end()) {
        if (!a.empty()) return send(c, ok().bytes(a).frame());
        if (!fits(c, "compareSet", key, b.size())) return;
        put(key, b);
        send(c, ok().bytes(b).frame());
        return keySet(key);
      }
      if (it->second == a) {
        if (!fits(c, "compareSet", key, b.size())) return;
        put(key, std::move(b));
      }
      return send(c, ok().bytes(kv_.at(key)).frame());
    }
    case wire::Op::kDeleteKey:
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.atEnd()) return malformed("deleteKey");
      return send(c, ok().i64(static_cast<int64_t>(erase(key))).frame());
    case wire::Op::kCheck: {
      if (!r.list(&keys, wire::kMaxKeyBytes) || !r.atEnd()) return malformed("check");
      const bool all = std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return kv_.count(k) > 0; });
      return send(c, ok().i64(all ? 1 : 0).frame());
    }
    case wire::Op::kNumKeys:
      if (!r.atEnd()) return malformed("numKeys");
      return send(c, ok().i64(static_cast<int64_t>(kv_.size())).frame());
    case wire::Op::kWait:
      if (!r.list(&keys, wire::kMaxKeyBytes) || !r.i64(&n) || !r.atEnd()) return malformed("wait");
      return block(c, std::move(keys), n, false);
    case wire::Op::kHello:
      break;
  }
  refuse(c, "an unknown request (op " + std::to_string(opByte) + ")");
}

void StoreServer::Loop::greet(Conn& c) {
  if (greetedCount_.load() >= limits_.maxConnections) {
    const std::string what = "the store already serves " + std::to_string(greetedCount_.load()) +
                             " connections, its limit (maxConnections " +
                             std::to_string(limits_.maxConnections) + ")";
    return dropBeforeHello(c, Event::kTooManyConnections, "refused " + c.peer + ": " + what,
                           what + "; the run's ranks hold a few each: is something else connecting?");
  }
  c.greeted = true;
  pending_.erase(c.id);
  pendingCount_.store(static_cast<int>(pending_.size()));
  greetedCount_.fetch_add(1);
  send(c, okFrame());
}

bool StoreServer::Loop::fits(Conn& c, const char* op, const std::string& key, size_t valueBytes) {
  const auto it = kv_.find(key);
  const uint64_t now = it == kv_.end() ? 0 : key.size() + it->second.size();
  const uint64_t after = storeBytes_ - now + key.size() + valueBytes;
  if (after <= limits_.maxStoreBytes || after <= storeBytes_) return true;  // shrinking always fits
  const std::string what =
      "the store would hold " + std::to_string(after) + " bytes of keys and values, over its limit of " +
      std::to_string(limits_.maxStoreBytes) + " bytes (maxStoreBytes; it holds " +
      std::to_string(storeBytes_) + "), with key '" + key + "' of " + std::to_string(valueBytes) + " bytes";
  logEvent(Event::kStoreFull, std::string("refused a ") + op + " from " + c.peer + ": " + what);
  send(c, wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kError)).bytes(what).frame());
  return false;
}

void StoreServer::Loop::put(const std::string& key, std::string value) {
  auto [it, added] = kv_.try_emplace(key);
  storeBytes_ -= added ? 0 : key.size() + it->second.size();
  storeBytes_ += key.size() + value.size();
  it->second = std::move(value);
  storeBytesSeen_.store(storeBytes_);
}

size_t StoreServer::Loop::erase(const std::string& key) {
  const auto it = kv_.find(key);
  if (it == kv_.end()) return 0;
  storeBytes_ -= key.size() + it->second.size();
  kv_.erase(it);
  storeBytesSeen_.store(storeBytes_);
  return 1;
}

void StoreServer::Loop::block(Conn& c, std::vector<std::string> keys, int64_t waitMs, bool isGet) {
  Waiter& w = c.waiter;
  w = Waiter();
  w.isGet = isGet;
  if (isGet) w.getKey = keys.front();
  // Each distinct missing key once: O(n) in the keys asked, duplicates included.
  std::unordered_set<std::string_view> seen;
  seen.reserve(keys.size());
  for (const auto& k : keys) {
    if (!seen.insert(k).second || kv_.count(k) != 0) continue;
    waitingOn_[k].insert(c.id);
    w.registered.push_back(k);
  }
  w.missing = w.registered.size();
  if (waitMs >= 0) w.deadline = Clock::now() + std::chrono::milliseconds(std::min(waitMs, kMaxWaitMs));
  w.active = true;
  blocked_.fetch_add(1);
  if (w.missing == 0) finish(c);
}

void StoreServer::Loop::keySet(const std::string& key) {
  auto it = waitingOn_.find(key);
  if (it == waitingOn_.end()) return;
  const std::unordered_set<uint64_t> ids = std::move(it->second);
  waitingOn_.erase(it);
  for (const uint64_t id : ids) {
    auto c = conns_.find(id);
    if (c == conns_.end() || c->second.closed || !c->second.waiter.active) continue;
    if (--c->second.waiter.missing == 0) finish(c->second);
  }
}

void StoreServer::Loop::finish(Conn& c) {
  Waiter w = std::move(c.waiter);
  c.waiter = Waiter();
  blocked_.fetch_sub(1);
  auto ok = wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kOk));
  if (w.isGet) {
    auto it = kv_.find(w.getKey);
    ok.bytes(it != kv_.end() ? it->second : std::string());
  }
  send(c, ok.frame());
}

std::vector<std::string> StoreServer::Loop::unregister(Conn& c) {
  // One step per distinct key the wait registered (NOTE [Store bounds]); counted for tests.
  std::vector<std::string> still;
  for (auto& k : c.waiter.registered) {
    unregisterSteps_.fetch_add(1, std::memory_order_relaxed);
    auto it = waitingOn_.find(k);
    if (it == waitingOn_.end() || it->second.erase(c.id) == 0) continue;  // met by a set
    if (it->second.empty()) waitingOn_.erase(it);
    still.push_back(std::move(k));
  }
  c.waiter = Waiter();
  blocked_.fetch_sub(1);
  return still;
}

void StoreServer::Loop::expire(Clock::time_point now) {
  for (auto& [id, c] : conns_) {
    if (c.closed || !c.waiter.active || !c.waiter.deadline || *c.waiter.deadline > now) continue;
    const std::vector<std::string> missing = unregister(c);
    send(c, wire::Writer().u8(static_cast<uint8_t>(wire::Reply::kTimeout)).list(missing).frame());
  }
}

StoreLimits StoreLimits::forWorld(int world) {
  const uint64_t w = static_cast<uint64_t>(std::max(world, 1));
  StoreLimits l;
  l.maxConnections = static_cast<int>(std::min<uint64_t>(8 * w + 32, 1 << 20));
  l.maxStoreBytes = (64ull << 20) + w * w * 1024;
  return l;
}

protocol::StatusOr<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& masterAddr, int port,
                                                                    StoreLimits limits) {
  const std::string named = "MASTER_ADDR '" + masterAddr + "'";
  if (limits.maxConnections < 1 || limits.maxPendingConnections < 1 || limits.helloTimeout.count() < 1 ||
      limits.maxStoreBytes < 1) {
    return Status::invalidArgument(
        "store limits: maxConnections, maxPendingConnections, helloTimeout and "
        "maxStoreBytes must be positive");
  }
  if (port < 0 || port > 65535) {
    return Status::invalidArgument("MASTER_PORT " + std::to_string(port) + " is not a TCP port");
  }
  const std::string service = std::to_string(port);
  std::string error;
  const wire::AddressList res = wire::resolveTcp(masterAddr, port, &error);
  if (!res) return Status::invalidArgument(named + ": cannot resolve it (" + error + ")");
  std::string notLocal;
  Status failed;
  int listenFd = -1;
  std::string bound;
  for (const addrinfo* p = res.get(); p && listenFd < 0 && failed; p = p->ai_next) {
    const std::string host = numericHost(p->ai_addr, p->ai_addrlen);
    if (isWildcard(p->ai_addr)) {
      // It would serve the store on every address of the host (docs/security.md: one address only).
      return Status::invalidArgument(named + " (" + host +
                                     ") is the wildcard address: the store would listen on every address of "
                                     "this host; give rank 0's address on the network the nodes share");
    }
    const int fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, p->ai_protocol);
    if (fd < 0) continue;  // a family this host lacks (IPv6 disabled)
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, p->ai_addr, p->ai_addrlen) != 0) {
      const int e = errno;
      ::close(fd);
      if (e == EADDRNOTAVAIL) {
        notLocal += (notLocal.empty() ? "" : ", ") + host;
      } else if (e == EADDRINUSE) {
        failed = Status::ioError("MASTER_PORT " + service + " is in use on " + host +
                                 " (a previous run or another program holds it)");
      } else {
        failed = Status::ioError("cannot bind " + host + ":" + service + " (" + std::strerror(e) + ")");
      }
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::listen(fd, SOMAXCONN) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      failed =
          Status::ioError("cannot listen on " + host + ":" + service + " (" + std::strerror(errno) + ")");
      ::close(fd);
      continue;
    }
    port = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    listenFd = fd;
    bound = host;
  }
  if (!failed) return failed;
  if (listenFd < 0) {
    return Status::invalidArgument(
        named + " (" + (notLocal.empty() ? std::string("no usable address") : notLocal) +
        ") is not an address of this host: rank 0 serves the rendezvous store on MASTER_ADDR only, so it "
        "must "
        "name rank 0's host (one of its addresses, or a name that resolves to one there)");
  }
  const int wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeFd < 0) {
    ::close(listenFd);
    return Status::ioError(std::string("store server: eventfd: ") + std::strerror(errno));
  }
  const std::string where =
      (bound.find(':') != std::string::npos ? "[" + bound + "]" : bound) + ":" + std::to_string(port);
  auto loop = std::make_unique<Loop>(listenFd, wakeFd, std::move(limits), where);
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(loop), bound, port));
}

StoreServer::StoreServer(std::unique_ptr<Loop> loop, std::string bound, int port)
    : loop_(std::move(loop)), bound_(std::move(bound)), port_(port) {
  thread_ = std::thread([l = loop_.get()] { l->run(); });
}

int StoreServer::blockedRequests() const {
  return loop_->blocked();
}

StoreServer::Counters StoreServer::counters() const {
  return loop_->counters();
}

StoreServer::~StoreServer() {
  loop_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fs::distributed

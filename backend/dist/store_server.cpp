#include "backend/dist/store_server.h"

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
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backend/dist/store_wire.h"

namespace fs::dist {

using protocol::Status;
namespace wire = store_wire;
using Clock = std::chrono::steady_clock;

namespace {

// A wait longer than this is taken as this (a deadline must not overflow the clock).
constexpr int64_t kMaxWaitMs = 30LL * 24 * 3600 * 1000;
// After accept() ran out of descriptors, listen again this soon (or when a connection closes).
constexpr int kAcceptRetryMs = 100;

std::string numericHost(const sockaddr* a, socklen_t len) {
  char host[NI_MAXHOST];
  if (::getnameinfo(a, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
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
  std::vector<std::string> keys;  // as asked
  size_t missing = 0;             // registrations in waitingOn_ not yet met by a set
  std::optional<Clock::time_point> deadline;
};

struct Conn {
  uint64_t id = 0;
  int fd = -1;
  bool greeted = false;
  bool closed = false;
  std::string in;
  std::string out;
  size_t outPos = 0;
  Waiter waiter;

  bool sending() const { return outPos < out.size(); }
  bool blocked() const { return waiter.active || sending(); }
  bool hasFrame() const {
    return in.size() >= wire::kHeaderBytes && (wire::bodyLength(in.data()) > wire::kMaxFrameBytes ||
                                               in.size() >= wire::kHeaderBytes + wire::bodyLength(in.data()));
  }
};

}  // namespace serving

using serving::Conn;
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
  Loop(int listenFd, int wakeFd) : listenFd_(listenFd), wakeFd_(wakeFd) {}
  ~Loop() {
    for (auto& [id, c] : conns_) {
      if (!c.closed) ::close(c.fd);
    }
    ::close(listenFd_);
    ::close(wakeFd_);
  }
  void run();
  int blocked() const { return blocked_.load(); }
  void stop() {
    stopping_.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wakeFd_, &one, sizeof one);
  }

 private:
  int timeoutMs(Clock::time_point now) const;
  void acceptAll();
  void readSome(Conn& c);
  void flush(Conn& c);
  void send(Conn& c, std::string frame);
  void refuse(Conn& c, const std::string& why);
  void closeConn(Conn& c);
  void serve(Conn& c);
  void handle(Conn& c, std::string_view body);
  void block(Conn& c, std::vector<std::string> keys, int64_t waitMs, bool isGet);
  void keySet(const std::string& key);
  void finish(Conn& c);
  // Ends c's waiter: removes c from waitingOn_; returns the keys it was still waiting for.
  std::vector<std::string> unregister(Conn& c);
  void expire(Clock::time_point now);

  int listenFd_;
  int wakeFd_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> blocked_{0};  // active waiters, read by blockedRequests()
  bool acceptPaused_ = false;
  uint64_t nextId_ = 1;
  std::unordered_map<uint64_t, Conn> conns_;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::vector<uint64_t>> waitingOn_;  // missing key -> waiting connections
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
    for (auto it = conns_.begin(); it != conns_.end();) {
      it = it->second.closed ? conns_.erase(it) : std::next(it);
    }
  }
}

int StoreServer::Loop::timeoutMs(Clock::time_point now) const {
  int64_t ms = acceptPaused_ ? kAcceptRetryMs : -1;
  for (const auto& [id, c] : conns_) {
    if (!c.blocked() && c.hasFrame()) return 0;  // freed by a set in the last pass, with a request queued
    if (c.waiter.active && c.waiter.deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*c.waiter.deadline - now).count();
      const int64_t clamped = std::clamp<int64_t>(left, 0, 1 << 30);
      ms = ms < 0 ? clamped : std::min(ms, clamped);
    }
  }
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
    Conn c;
    c.id = nextId_++;
    c.fd = fd;
    conns_.emplace(c.id, std::move(c));
  }
}

void StoreServer::Loop::readSome(Conn& c) {
  // One chunk per pass: a connection's buffer grows by at most this much beyond the frame it is sending.
  const ssize_t n = ::recv(c.fd, buf_.data(), buf_.size(), 0);
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
  ::close(c.fd);
  c.closed = true;
  c.in.clear();
  c.out.clear();
  c.outPos = 0;
  acceptPaused_ = false;  // a descriptor is free again
}

void StoreServer::Loop::serve(Conn& c) {
  while (!c.closed && !c.blocked() && c.in.size() >= wire::kHeaderBytes) {
    const uint32_t n = wire::bodyLength(c.in.data());
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
  if (!r.u8(&opByte)) return refuse(c, "an empty request");
  const auto op = static_cast<wire::Op>(opByte);
  if (!c.greeted) {
    std::string magic;
    if (op != wire::Op::kHello || !r.bytes(&magic, 64) || magic != wire::kMagic) {
      return refuse(c, "this is a Flamingo store: a connection starts with \"" + std::string(wire::kMagic) +
                           "\" (is a c10d TCPStore client talking to it?)");
    }
    c.greeted = true;
    return send(c, okFrame());
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
      kv_[key] = std::move(a);
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
      kv_[key] = std::to_string(sum);
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
        kv_[key] = b;
        send(c, ok().bytes(b).frame());
        return keySet(key);
      }
      if (it->second == a) it->second = std::move(b);
      return send(c, ok().bytes(it->second).frame());
    }
    case wire::Op::kDeleteKey:
      if (!r.bytes(&key, wire::kMaxKeyBytes) || !r.atEnd()) return malformed("deleteKey");
      return send(c, ok().i64(static_cast<int64_t>(kv_.erase(key))).frame());
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

void StoreServer::Loop::block(Conn& c, std::vector<std::string> keys, int64_t waitMs, bool isGet) {
  Waiter& w = c.waiter;
  w = Waiter();
  w.isGet = isGet;
  for (const auto& k : keys) {
    if (kv_.count(k) == 0) {
      waitingOn_[k].push_back(c.id);
      ++w.missing;
    }
  }
  w.keys = std::move(keys);
  if (waitMs >= 0) w.deadline = Clock::now() + std::chrono::milliseconds(std::min(waitMs, kMaxWaitMs));
  w.active = true;
  blocked_.fetch_add(1);
  if (w.missing == 0) finish(c);
}

void StoreServer::Loop::keySet(const std::string& key) {
  auto it = waitingOn_.find(key);
  if (it == waitingOn_.end()) return;
  const std::vector<uint64_t> ids = std::move(it->second);
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
    auto it = kv_.find(w.keys.front());
    ok.bytes(it != kv_.end() ? it->second : std::string());
  }
  send(c, ok.frame());
}

std::vector<std::string> StoreServer::Loop::unregister(Conn& c) {
  std::vector<std::string> still;
  for (const auto& k : c.waiter.keys) {
    auto it = waitingOn_.find(k);
    if (it == waitingOn_.end()) continue;
    auto& v = it->second;
    if (std::find(v.begin(), v.end(), c.id) == v.end()) continue;
    still.push_back(k);
    v.erase(std::remove(v.begin(), v.end(), c.id), v.end());
    if (v.empty()) waitingOn_.erase(it);
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

protocol::StatusOr<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& masterAddr, int port) {
  const std::string named = "MASTER_ADDR '" + masterAddr + "'";
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
  auto loop = std::make_unique<Loop>(listenFd, wakeFd);
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(loop), bound, port));
}

StoreServer::StoreServer(std::unique_ptr<Loop> loop, std::string bound, int port)
    : loop_(std::move(loop)), bound_(std::move(bound)), port_(port) {
  thread_ = std::thread([l = loop_.get()] { l->run(); });
}

int StoreServer::blockedRequests() const {
  return loop_->blocked();
}

StoreServer::~StoreServer() {
  loop_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fs::dist

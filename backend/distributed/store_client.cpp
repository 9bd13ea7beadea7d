#include "backend/distributed/store_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/exception.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "backend/distributed/error_text.h"
#include "backend/distributed/store_wire.h"

namespace fs::distributed {

namespace wire = store_wire;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Milliseconds left until `deadline` for poll(); -1 without one.
int pollMs(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::ceil<milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// One connection attempt to every address `host` resolves to; the socket (non-blocking), or -1 and `why`.
int connectOnce(const std::string& host, int port, Clock::time_point deadline, std::string* why) {
  std::string error;
  const wire::AddressList res = wire::resolveTcp(host, port, &error);
  if (!res) {
    *why = "cannot resolve '" + host + "': " + error;
    return -1;
  }
  int fd = -1;
  for (const addrinfo* p = res.get(); p && fd < 0; p = p->ai_next) {
    fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, p->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, p->ai_addr, p->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        // Bounded: a host that drops our SYNs must not hold us past the deadline.
        pollfd pfd{fd, POLLOUT, 0};
        const int n = ::poll(&pfd, 1, pollMs(deadline));
        socklen_t len = sizeof err;
        err = n == 1 ? 0 : ETIMEDOUT;
        if (n == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err != 0) {
      *why = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

std::string keyList(const std::vector<std::string>& keys) {
  std::string out;
  const size_t shown = std::min<size_t>(keys.size(), 8);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  if (keys.size() > shown) out += " and " + std::to_string(keys.size() - shown) + " more";
  return out;
}

std::string bytesOf(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

}  // namespace

struct StoreClient::Answer {
  wire::Reply status = wire::Reply::kError;
  std::string body;  // after the status byte
};

StoreClient::StoreClient(std::string address, int port, milliseconds timeout)
    : c10d::Store(timeout), address_(address), port_(port), where_(address + ":" + std::to_string(port)) {
  const auto deadline = Clock::now() + timeout;
  std::string last = "no attempt";
  milliseconds pause(20);
  std::lock_guard<std::mutex> lock(mu_);
  for (;;) {
    fd_ = connectOnce(address, port, deadline, &last);
    if (fd_ >= 0) {
      std::optional<Answer> a;
      try {
        a = exchange(wire::Writer().u8(static_cast<uint8_t>(wire::Op::kHello)).bytes(wire::kMagic).frame(),
                     milliseconds(0), false);
      } catch (const c10::DistStoreError& e) {
        // Closed without an answer: the server dropped it before its hello (NOTE [Store bounds] in
        // store_server.h: too many connections waiting for theirs) or is restarting. Connect again.
        last = firstPart(e.what());
      }
      if (a && a->status == wire::Reply::kOk) return;
      if (a) lose("the server did not accept the store's hello (" + a->body + ")");
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      throw c10d::TimeoutError("no store answered at " + where_ + " within " + secondsText(timeout) +
                               " (last attempt: " + last + ")");
    }
    // Nothing listens yet (rank 0 starts later) or the name does not resolve yet: try again.
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, milliseconds(500));
  }
}

c10::intrusive_ptr<c10d::Store> StoreClient::clone() {
  return c10::make_intrusive<StoreClient>(address_, port_, timeout_);
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

void StoreClient::lose(const std::string& why) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  lost_ = why;
  throw c10::DistStoreError("store at " + where_ + ": " + why);
}

StoreClient::Answer StoreClient::exchange(const std::string& frame, milliseconds serverWait, bool unbounded) {
  if (fd_ < 0)
    throw c10::DistStoreError("store at " + where_ + ": the connection was lost earlier: " + lost_);
  std::optional<Clock::time_point> deadline;
  if (!unbounded) deadline = Clock::now() + serverWait + timeout_;
  const auto bound = secondsText(std::chrono::duration_cast<milliseconds>(serverWait + timeout_));
  size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      lose(std::string("sending failed (") + std::strerror(errno) +
           "): rank 0 has exited or its host is down");
    }
    pollfd pfd{fd_, POLLOUT, 0};
    if (::poll(&pfd, 1, pollMs(deadline)) == 0) lose("could not send a request within " + bound);
  }
  std::string in;
  size_t want = wire::kHeaderBytes;
  bool header = true;
  char buf[64 << 10];
  while (in.size() < want) {
    const size_t room = std::min(sizeof buf, want - in.size());
    const ssize_t n = ::recv(fd_, buf, room, 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      if (header && in.size() == wire::kHeaderBytes) {
        const uint32_t len = wire::bodyLength(in.data());
        if (len < 1 || len > wire::kMaxFrameBytes) lose("a reply of " + std::to_string(len) + " bytes");
        want += len;
        header = false;
      }
      continue;
    }
    if (n == 0) lose("the connection was closed (rank 0 has exited, or its host is down)");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      lose(std::string("receiving failed (") + std::strerror(errno) +
           "): rank 0 has exited or its host is down");
    }
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, pollMs(deadline)) == 0)
      lose("no reply within " + bound + " (is rank 0's host down?)");
  }
  Answer a;
  a.status = static_cast<wire::Reply>(static_cast<uint8_t>(in[wire::kHeaderBytes]));
  a.body = in.substr(wire::kHeaderBytes + 1);
  if (a.status == wire::Reply::kError) {
    std::string text;
    wire::Reader(a.body).bytes(&text, wire::kMaxFrameBytes);
    a.body = text;
  }
  return a;
}

namespace {

void checkKey(const std::string& where, const std::string& key) {
  if (key.size() > wire::kMaxKeyBytes) {
    throw c10::DistStoreError("store at " + where + ": key '" + key.substr(0, 64) + "...' is " +
                              std::to_string(key.size()) + " bytes, over the store's limit of " +
                              std::to_string(wire::kMaxKeyBytes));
  }
}

void checkValue(const std::string& where, const std::string& key, size_t bytes) {
  if (bytes > wire::kMaxValueBytes) {
    throw c10::DistStoreError("store at " + where + ": the value for key '" + key + "' is " +
                              std::to_string(bytes) + " bytes, over the store's limit of " +
                              std::to_string(wire::kMaxValueBytes));
  }
}

void checkKeys(const std::string& where, const std::vector<std::string>& keys) {
  size_t total = 0;
  for (const auto& k : keys) {
    checkKey(where, k);
    total += 4 + k.size();
  }
  if (total > wire::kMaxFrameBytes - 64) {
    throw c10::DistStoreError("store at " + where + ": " + std::to_string(keys.size()) +
                              " keys are too many for one request");
  }
}

[[noreturn]] void refused(const std::string& where, const char* op, const std::string& text) {
  throw c10::DistStoreError("store at " + where + ": " + op + " refused: " + text);
}

int64_t i64Of(const std::string& where, const char* op, const std::string& body) {
  int64_t v = 0;
  wire::Reader r(body);
  if (!r.i64(&v)) refused(where, op, "a garbled reply");
  return v;
}

std::string bytesOfReply(const std::string& where, const char* op, const std::string& body) {
  std::string v;
  wire::Reader r(body);
  if (!r.bytes(&v, wire::kMaxValueBytes)) refused(where, op, "a garbled reply");
  return v;
}

}  // namespace

void StoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  checkKey(where_, key);
  checkValue(where_, key, value.size());
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a = exchange(
      wire::Writer().u8(static_cast<uint8_t>(wire::Op::kSet)).bytes(key).bytes(bytesOf(value)).frame(),
      milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "set", a.body);
}

std::vector<uint8_t> StoreClient::compareSet(const std::string& key,
                                             const std::vector<uint8_t>& expectedValue,
                                             const std::vector<uint8_t>& desiredValue) {
  checkKey(where_, key);
  checkValue(where_, key, expectedValue.size());
  checkValue(where_, key, desiredValue.size());
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a = exchange(wire::Writer()
                                .u8(static_cast<uint8_t>(wire::Op::kCompareSet))
                                .bytes(key)
                                .bytes(bytesOf(expectedValue))
                                .bytes(bytesOf(desiredValue))
                                .frame(),
                            milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "compareSet", a.body);
  const std::string v = bytesOfReply(where_, "compareSet", a.body);
  return std::vector<uint8_t>(v.begin(), v.end());
}

std::vector<uint8_t> StoreClient::get(const std::string& key) {
  checkKey(where_, key);
  std::lock_guard<std::mutex> lock(mu_);
  const bool unbounded = timeout_ == kNoTimeout;
  const Answer a = exchange(wire::Writer()
                                .u8(static_cast<uint8_t>(wire::Op::kGet))
                                .bytes(key)
                                .i64(unbounded ? -1 : timeout_.count())
                                .frame(),
                            timeout_, unbounded);
  if (a.status == wire::Reply::kTimeout) {
    throw c10d::TimeoutError("store at " + where_ + ": key '" + key + "' was not set within " +
                             secondsText(timeout_));
  }
  if (a.status != wire::Reply::kOk) refused(where_, "get", a.body);
  const std::string v = bytesOfReply(where_, "get", a.body);
  return std::vector<uint8_t>(v.begin(), v.end());
}

int64_t StoreClient::add(const std::string& key, int64_t value) {
  checkKey(where_, key);
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a =
      exchange(wire::Writer().u8(static_cast<uint8_t>(wire::Op::kAdd)).bytes(key).i64(value).frame(),
               milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "add", a.body);
  return i64Of(where_, "add", a.body);
}

bool StoreClient::deleteKey(const std::string& key) {
  checkKey(where_, key);
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a = exchange(wire::Writer().u8(static_cast<uint8_t>(wire::Op::kDeleteKey)).bytes(key).frame(),
                            milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "deleteKey", a.body);
  return i64Of(where_, "deleteKey", a.body) != 0;
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  checkKeys(where_, keys);
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a = exchange(wire::Writer().u8(static_cast<uint8_t>(wire::Op::kCheck)).list(keys).frame(),
                            milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "check", a.body);
  return i64Of(where_, "check", a.body) != 0;
}

int64_t StoreClient::getNumKeys() {
  std::lock_guard<std::mutex> lock(mu_);
  const Answer a =
      exchange(wire::Writer().u8(static_cast<uint8_t>(wire::Op::kNumKeys)).frame(), milliseconds(0), false);
  if (a.status != wire::Reply::kOk) refused(where_, "getNumKeys", a.body);
  return i64Of(where_, "getNumKeys", a.body);
}

void StoreClient::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void StoreClient::wait(const std::vector<std::string>& keys, const milliseconds& timeout) {
  checkKeys(where_, keys);
  std::lock_guard<std::mutex> lock(mu_);
  const bool unbounded = timeout == kNoTimeout;
  const Answer a = exchange(wire::Writer()
                                .u8(static_cast<uint8_t>(wire::Op::kWait))
                                .list(keys)
                                .i64(unbounded ? -1 : timeout.count())
                                .frame(),
                            timeout, unbounded);
  if (a.status == wire::Reply::kTimeout) {
    std::vector<std::string> missing;
    wire::Reader(a.body).list(&missing, wire::kMaxKeyBytes);
    throw c10d::TimeoutError("store at " + where_ + ": timed out after " + secondsText(timeout) +
                             " waiting for key(s) " + keyList(missing) + " (" + std::to_string(keys.size()) +
                             " asked)");
  }
  if (a.status != wire::Reply::kOk) refused(where_, "wait", a.body);
}

}  // namespace fs::distributed

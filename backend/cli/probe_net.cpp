#include "backend/cli/probe_net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

namespace fs::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// What a foreign service sent, printable and short, for a message.
std::string shown(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 60)) out += (c >= 32 && c < 127) ? c : '?';
  return out;
}

std::string where(const ConnectOptions& o) {
  return o.host + ":" + std::to_string(o.port);
}

// One connection attempt to one address; 0 when connected, else an errno (ETIMEDOUT at the deadline).
int connectOne(int fd, const addrinfo* ai, Clock::time_point deadline) {
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  for (;;) {
    pollfd pfd{fd, POLLOUT, 0};
    const int n = ::poll(&pfd, 1, msLeft(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err;
  }
}

// Reads up to the first newline (or 256 bytes, or EOF, or the deadline).
std::string readLine(int fd, Clock::time_point deadline, bool* timedOut) {
  std::string line;
  char buf[256];
  *timedOut = false;
  while (line.find('\n') == std::string::npos && line.size() < 256) {
    pollfd pfd{fd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, msLeft(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *timedOut = true;
      break;
    }
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    line.append(buf, static_cast<size_t>(got));
  }
  const auto nl = line.find('\n');
  return nl == std::string::npos ? line : line.substr(0, nl);
}

nlohmann::json unreachable(const ConnectOptions& o, const std::string& error) {
  return {{"reachable", false}, {"host", o.host}, {"port", o.port}, {"error", error}};
}

}  // namespace

std::string probeGreeting(const std::string& nonce) {
  return "flamingo-probe " + nonce;
}

bool validNonce(const std::string& nonce) {
  if (nonce.empty() || nonce.size() > 64) return false;
  for (char c : nonce) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  }
  return true;
}

nlohmann::json listenAndAnswer(const ListenOptions& options,
                               const std::function<void(const nlohmann::json&)>& onListening) {
  auto failed = [&](const std::string& error) {
    return nlohmann::json{{"listening", false}, {"port", options.port}, {"error", error}};
  };
  Fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (sock.fd < 0) return failed(std::string("cannot create a socket: ") + std::strerror(errno));
  // Like the rendezvous store: a port left in TIME_WAIT by a previous run is free.
  const int one = 1;
  ::setsockopt(sock.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  if (::bind(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    const std::string port = std::to_string(options.port);
    if (err == EADDRINUSE)
      return failed("port " + port +
                    " is in use on this host (a previous run or another program holds it); " +
                    "choose another rendezvous port or stop that program");
    if (err == EACCES)
      return failed("not allowed to listen on port " + port + " (ports below 1024 need root); " +
                    "choose a rendezvous port from 1024 up");
    return failed("cannot listen on 0.0.0.0:" + port + ": " + std::strerror(err));
  }
  if (::listen(sock.fd, 64) != 0) return failed(std::string("listen: ") + std::strerror(errno));
  socklen_t len = sizeof(addr);
  ::getsockname(sock.fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  onListening({{"listening", true}, {"port", port}});

  nlohmann::json selfCheck;
  std::atomic<bool> selfFailed{false};  // its connection will never come: do not wait for it
  std::thread self;
  if (!options.self_check_host.empty()) {
    self = std::thread([&] {
      selfCheck = connectAndCheck({options.self_check_host, port, options.nonce, options.timeout_s, 0});
      if (!selfCheck.value("reachable", false)) selfFailed = true;
    });
  }
  const std::string line = probeGreeting(options.nonce) + "\n";
  const auto deadline = Clock::now() + std::chrono::seconds(options.timeout_s);
  int answered = 0;
  while (options.connections == 0 || answered < options.connections - (selfFailed.load() ? 1 : 0)) {
    const int left = msLeft(deadline);
    if (left == 0) break;
    pollfd pfd{sock.fd, POLLIN, 0};
    // In slices while a self-check runs, so that its failure is noticed.
    const int n = ::poll(&pfd, 1, self.joinable() ? std::min(left, 100) : left);
    if (n <= 0) continue;  // EINTR or the deadline: the loop head decides
    Fd conn(::accept4(sock.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.fd < 0) continue;
    // One short line fits any socket buffer: this write does not block.
    if (::send(conn.fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size()))
      ++answered;
  }
  sock.reset();  // a self-check still waiting for its answer gets none: it ends at once
  nlohmann::json result = {{"listening", true}, {"port", port}, {"answered", answered}};
  if (self.joinable()) {
    self.join();
    result["self_check"] = selfCheck;
  }
  return result;
}

nlohmann::json connectAndCheck(const ConnectOptions& o) {
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  const auto retryUntil = std::min(deadline, Clock::now() + std::chrono::seconds(o.wait_s));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(o.port);
  if (const int rc = ::getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return unreachable(o, "cannot resolve " + o.host + ": " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);

  for (;;) {
    int lastError = 0;
    for (const addrinfo* ai = list.get(); ai; ai = ai->ai_next) {
      Fd sock(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
      if (sock.fd < 0) {
        lastError = errno;
        continue;
      }
      lastError = connectOne(sock.fd, ai, deadline);
      if (lastError != 0) continue;
      bool timedOut = false;
      const std::string line = readLine(sock.fd, deadline, &timedOut);
      if (line == probeGreeting(o.nonce)) return {{"reachable", true}, {"host", o.host}, {"port", o.port}};
      if (line.rfind(probeGreeting(""), 0) == 0)
        return unreachable(o, where(o) + " answered as the flamingo-train probe of another check (nonce '" +
                                  shown(line.substr(probeGreeting("").size())) +
                                  "'): is another pre-flight running?");
      if (!line.empty())
        return unreachable(o, where(o) + " answered, but not a flamingo-train probe (it sent '" +
                                  shown(line) + "'): another program holds the port");
      return unreachable(o, where(o) +
                                (timedOut ? " accepted the connection but sent nothing within " +
                                                std::to_string(o.timeout_s) + " s"
                                          : " closed the connection without a word") +
                                ": not a flamingo-train probe");
    }
    if (lastError == ECONNREFUSED && msLeft(retryUntil) > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(200, msLeft(retryUntil))));
      continue;
    }
    if (lastError == ECONNREFUSED)
      return unreachable(o, "connection refused: nothing listens on " + where(o));
    if (lastError == ETIMEDOUT)
      return unreachable(o, "no answer from " + where(o) + " within " + std::to_string(o.timeout_s) +
                                " s: a firewall may drop the packets, or the address is wrong");
    return unreachable(o, "cannot connect to " + where(o) + ": " + std::strerror(lastError));
  }
}

}  // namespace fs::cli

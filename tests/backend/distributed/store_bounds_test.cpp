// NOTE [Store bounds] (store_server.h), issue 42 item 5: what a peer that
// reaches the store's port can make rank 0 hold. 200 idle connections
// while a rank still gets in; a connection that sends no hello in time; a
// flood before the hello cut at the hello's size; connections past the
// hello capped by name; the total bytes of keys and values capped with the
// store still serving; ending a wait on many duplicate keys costs one step
// per distinct key; a client dropped before its hello connects again.
// Nothing here measures time: short timeouts are set by the test and every
// wait is for an observable event (a closed socket, a counter, a log line),
// with a generous deadline that only turns a hang into a failure.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <torch/csrc/distributed/c10d/exception.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

#include "backend/distributed/rendezvous.h"
#include "backend/distributed/store_client.h"
#include "backend/distributed/store_server.h"
#include "backend/distributed/store_wire.h"
#include "tests/backend/distributed/rank_processes.h"

namespace fs::distributed {
namespace {

namespace wire = store_wire;
using std::chrono::milliseconds;

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}
std::string text(const std::vector<uint8_t>& b) {
  return std::string(b.begin(), b.end());
}

// The store's log lines, kept for the test to read (the server's thread writes them).
class LogLines {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    };
  }
  // The first line holding `part`, or "".
  std::string find(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& l : lines_) {
      if (l.find(part) != std::string::npos) return l;
    }
    return "";
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

std::unique_ptr<StoreServer> serve(StoreLimits limits) {
  auto s = StoreServer::start("127.0.0.1", 0, std::move(limits));
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(s.value()) : nullptr;
}

c10::intrusive_ptr<StoreClient> client(const StoreServer& s) {
  return c10::make_intrusive<StoreClient>(s.boundAddress(), s.port(), std::chrono::seconds(30));
}

// Waits until `done` holds; the deadline only turns a hang into a failure. Use as ASSERT_TRUE(await(...)).
::testing::AssertionResult await(const std::function<bool()>& done, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return ::testing::AssertionFailure() << "never happened: " << what;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return ::testing::AssertionSuccess();
}

// A raw TCP connection to the store (what our client never sends); reads on it give up after 60 s, so a
// server that never closes it fails the test instead of hanging it. -errno when it cannot connect.
int connectRaw(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    return -e;
  }
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// "127.0.0.1:PORT" of our end of `fd`: how the server names this peer.
std::string localName(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// Everything the server sends until it closes the connection; "<reset>" / "<still open>" otherwise.
std::string readToEnd(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      return out;
    } else if (errno != EINTR) {
      return errno == EAGAIN || errno == EWOULDBLOCK ? out + "<still open>" : out + "<reset>";
    }
  }
}

std::string hello() {
  return wire::Writer().u8(static_cast<uint8_t>(wire::Op::kHello)).bytes(wire::kMagic).frame();
}

std::string header(uint32_t n) {
  std::string h(wire::kHeaderBytes, '\0');
  for (size_t i = 0; i < wire::kHeaderBytes; ++i) h[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return h;
}

// The text of a kError frame at the start of `reply`.
std::string errorText(const std::string& reply) {
  if (reply.size() < wire::kHeaderBytes + 1 ||
      static_cast<wire::Reply>(reply[wire::kHeaderBytes]) != wire::Reply::kError)
    return "<not an error reply: " + std::to_string(reply.size()) + " bytes>";
  std::string t;
  wire::Reader(std::string_view(reply).substr(wire::kHeaderBytes + 1)).bytes(&t, 1 << 20);
  return t;
}

std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

// A rank's work: set, get, and a wait that another client's set answers.
void legitimateClientsWork(const StoreServer& s) {
  auto a = client(s);
  auto b = client(s);
  a->set("k", bytes("v"));
  EXPECT_EQ(text(b->get("k")), "v");
  std::string error;
  std::thread waiter([&] { error = thrown([&] { b->wait({"later"}); }); });
  EXPECT_TRUE(await([&] { return s.blockedRequests() == 1; }, "the wait is held"));
  a->set("later", bytes("1"));
  waiter.join();
  EXPECT_EQ(error, "<nothing thrown>");
  EXPECT_EQ(s.blockedRequests(), 0);
}

TEST(StoreBoundsTest, TwoHundredIdleConnectionsKeepNoRankOut) {
  LogLines log;
  StoreLimits limits;                           // maxPendingConnections 64
  limits.helloTimeout = std::chrono::hours(1);  // only the cap drops them here
  limits.log = log.sink();
  auto s = serve(limits);
  ASSERT_EQ(limits.maxPendingConnections, 64);
  constexpr int kIdle = 200;
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(connectRaw(s->port()));
    ASSERT_GE(idle.back(), 0) << "connection " << i;
  }
  const std::string oldest = localName(idle.front());
  // Both counters: between one drop and the next accept the pending count is briefly 63.
  ASSERT_TRUE(await(
      [&] {
        const auto n = s->counters();
        return n.droppedBeforeHello == kIdle - 64 && n.pendingConnections == 64;
      },
      "136 idle connections dropped, 64 held"));
  // The oldest were dropped, without a word (they said nothing); the newest 64 are held.
  for (int i = 0; i < kIdle - 64; ++i) EXPECT_EQ(readToEnd(idle[i]), "") << "connection " << i;
  const std::string line = log.find("dropped " + oldest + " before its hello");
  EXPECT_NE(line.find("64 connections were waiting for their hello, the limit (maxPendingConnections 64)"),
            std::string::npos)
      << log.all();
  legitimateClientsWork(*s);
  ASSERT_TRUE(await([&] { return s->counters().connections == 0; }, "the rank's clients are gone"));
  EXPECT_LE(s->counters().pendingConnections, 64);
  EXPECT_EQ(s->counters().pendingConnections + static_cast<int>(s->counters().droppedBeforeHello), kIdle);
  for (const int fd : idle) ::close(fd);
}

TEST(StoreBoundsTest, AConnectionWithoutAHelloInTimeIsDropped) {
  LogLines log;
  StoreLimits limits;
  limits.helloTimeout = milliseconds(200);
  limits.log = log.sink();
  auto s = serve(limits);
  const int silent = connectRaw(s->port());
  const int half = connectRaw(s->port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(half, 0);
  const std::string h = hello();
  ASSERT_EQ(::send(half, h.data(), 10, MSG_NOSIGNAL), 10);
  EXPECT_EQ(readToEnd(silent), "");
  EXPECT_EQ(readToEnd(half), "");
  EXPECT_NE(log.find("dropped " + localName(silent) +
                     ": no complete hello within 0.2 s (helloTimeout) of connecting (0 bytes received)"),
            "")
      << log.all();
  EXPECT_NE(log.find("dropped " + localName(half) + ": no complete hello within 0.2 s"), "") << log.all();
  ::close(silent);
  ::close(half);
  legitimateClientsWork(*s);
}

TEST(StoreBoundsTest, AFloodBeforeTheHelloIsCutAtTheHellosSize) {
  LogLines log;
  StoreLimits limits;
  limits.log = log.sink();
  auto s = serve(limits);
  // 16 MiB announced: within the limit of a frame after the hello, far over a hello's.
  const uint32_t announced = 16u << 20;
  ASSERT_LE(announced, wire::kMaxFrameBytes);
  {
    const int fd = connectRaw(s->port());
    ASSERT_GE(fd, 0);
    const std::string first = header(announced);
    ASSERT_EQ(::send(fd, first.data(), first.size(), MSG_NOSIGNAL), static_cast<ssize_t>(first.size()));
    const std::string reply = readToEnd(fd);  // ends: refused before any body
    EXPECT_NE(errorText(reply).find("its first frame announces 16777216 bytes, over the hello's limit of " +
                                    std::to_string(wire::kMaxHelloBodyBytes) + " bytes"),
              std::string::npos)
        << errorText(reply);
    EXPECT_NE(log.find("dropped " + localName(fd) +
                       " before its hello: its first frame announces 16777216 bytes, over the hello's limit"),
              "")
        << log.all();
    ::close(fd);
  }
  {
    // A megabyte behind the header: the server reads no more than a hello can need.
    const int fd = connectRaw(s->port());
    ASSERT_GE(fd, 0);
    const std::string peer = localName(fd);
    std::string flood = header(announced) + std::string(1 << 20, 'x');
    size_t sent = 0;
    while (sent < flood.size()) {
      const ssize_t n = ::send(fd, flood.data() + sent, flood.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) break;  // the server stopped reading, or closed it
      sent += static_cast<size_t>(n);
    }
    ASSERT_TRUE(await([&] { return !log.find("dropped " + peer).empty(); }, "the flood is dropped"));
    const std::string line = log.find("dropped " + peer);
    const auto at = line.find("(after reading ");
    ASSERT_NE(at, std::string::npos) << line;
    EXPECT_LE(std::stoul(line.substr(at + 15)), wire::kMaxHelloFrameBytes) << line;
    ::close(fd);
  }
  EXPECT_EQ(s->counters().droppedBeforeHello, 2u);
  legitimateClientsWork(*s);
}

TEST(StoreBoundsTest, ConnectionsPastTheHelloAreCappedByName) {
  LogLines log;
  StoreLimits limits;
  limits.maxConnections = 3;
  limits.log = log.sink();
  auto s = serve(limits);
  auto a = client(*s);
  auto b = client(*s);
  auto c = client(*s);
  const std::string why = thrown([&] { client(*s); });
  EXPECT_NE(why.find("the server did not accept the store's hello (the store already serves 3 connections, "
                     "its limit (maxConnections 3)"),
            std::string::npos)
      << why;
  EXPECT_NE(log.find("refused 127.0.0.1:"), "") << log.all();
  c.reset();  // closes its connection: room for one
  ASSERT_TRUE(await([&] { return s->counters().connections == 2; }, "the closed connection is gone"));
  auto d = client(*s);
  d->set("k", bytes("v"));
  EXPECT_EQ(text(a->get("k")), "v");
}

TEST(StoreBoundsTest, TheStoresTotalSizeIsBoundedAndItKeepsServing) {
  LogLines log;
  StoreLimits limits;
  limits.maxStoreBytes = 1000;
  limits.log = log.sink();
  auto s = serve(limits);
  auto c = client(*s);
  c->set("a", std::vector<uint8_t>(500, 'a'));
  EXPECT_EQ(s->counters().storeBytes, 501u);
  const std::string why = thrown([&] { c->set("b", std::vector<uint8_t>(600, 'b')); });
  EXPECT_NE(why.find("set refused: the store would hold 1102 bytes of keys and values, over its limit of "
                     "1000 bytes (maxStoreBytes; it holds 501), with key 'b' of 600 bytes"),
            std::string::npos)
      << why;
  EXPECT_NE(log.find("refused a set from 127.0.0.1:"), "") << log.all();
  // Refused, not half done; the connection and the store go on.
  EXPECT_FALSE(c->check({"b"}));
  EXPECT_EQ(text(c->get("a")), std::string(500, 'a'));
  c->set("b", std::vector<uint8_t>(400, 'b'));
  EXPECT_EQ(c->add("n", 10), 10);
  EXPECT_EQ(s->counters().storeBytes, 501u + 401 + 3);
  // Replacing counts the difference; add and compareSet are bounded too.
  EXPECT_NE(thrown([&] { c->set("a", std::vector<uint8_t>(600, 'a')); }).find("over its limit of 1000"),
            std::string::npos);
  c->set("a", std::vector<uint8_t>(100, 'a'));
  EXPECT_EQ(s->counters().storeBytes, 101u + 401 + 3);
  EXPECT_NE(
      thrown([&] { c->compareSet("c", {}, std::vector<uint8_t>(600, 'c')); }).find("compareSet refused"),
      std::string::npos);
  EXPECT_NE(thrown([&] { c->add(std::string(600, 'k'), 1); }).find("add refused"), std::string::npos);
  EXPECT_TRUE(c->deleteKey("b"));
  EXPECT_EQ(s->counters().storeBytes, 101u + 3);
  c->set("c", std::vector<uint8_t>(800, 'c'));
  EXPECT_EQ(c->getNumKeys(), 3);
  EXPECT_EQ(s->counters().storeBytes, 101u + 3 + 801);
}

TEST(StoreBoundsTest, EndingAWaitCostsOneStepPerDistinctKey) {
  StoreLimits limits;
  auto s = serve(limits);
  constexpr int kKeys = 20000;
  const std::vector<std::string> dup(kKeys, "dup");
  // Another connection waits on the same key: its registrations are what a quadratic unregister rescans.
  auto holder = client(*s);
  std::string error;
  std::thread held([&] { error = thrown([&] { holder->wait(dup); }); });
  EXPECT_TRUE(await([&] { return s->blockedRequests() == 1; }, "the holder's wait is held"));
  auto c = client(*s);
  const uint64_t before = s->counters().unregisterSteps;
  const std::string why = thrown([&] { c->wait(dup, milliseconds(1)); });
  EXPECT_NE(why.find("waiting for key(s) 'dup' (20000 asked)"), std::string::npos) << why;
  EXPECT_EQ(s->counters().unregisterSteps - before, 1u) << "20000 copies of one key: one step";
  // Distinct keys: one step each, linear.
  std::vector<std::string> distinct;
  for (int i = 0; i < kKeys; ++i) distinct.push_back("k" + std::to_string(i));
  const uint64_t mid = s->counters().unregisterSteps;
  EXPECT_NE(thrown([&] { c->wait(distinct, milliseconds(1)); }).find("(20000 asked)"), std::string::npos);
  EXPECT_EQ(s->counters().unregisterSteps - mid, static_cast<uint64_t>(kKeys));
  c->set("dup", bytes("1"));
  held.join();
  EXPECT_EQ(error, "<nothing thrown>");
  EXPECT_EQ(s->blockedRequests(), 0);
}

// forWorld's allowances against what real Gloo groups put in the store: two groups (the host group and a
// device group, as joinRun makes them) of 4 ranks, each rank with two clients as in joinRun. Measured on
// LibTorch 2.11: 1641 bytes at 4 ranks, 3789 at 8 (about 470 per rank), 2 connections per rank.
TEST(StoreBoundsTest, GlooGroupsFitForWorldsLimits) {
  constexpr int kWorld = 4;
  const StoreLimits limits = StoreLimits::forWorld(kWorld);
  auto s = serve(limits);
  std::vector<std::string> errors(kWorld);
  // No collective runs on them: LibTorch 2.11's FlightRecorder (one per process) crashes about once in
  // 15 runs when threads as ranks record all-reduces at once (std::_Rb_tree_insert_and_rebalance in
  // FlightRecorder::recordWithResetEnabled under ProcessGroupGloo::enqueue).
  std::vector<std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>>> groups(kWorld);
  std::atomic<int> met{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto main = client(*s);
        auto heartbeat = client(*s);
        heartbeat->set("heartbeat/" + std::to_string(r), bytes("alive"));
        for (const char* group : {"world/", "device/"}) {
          auto store = c10::make_intrusive<c10d::PrefixStore>(group, main);
          auto o = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
          // Constructing the group is its rendezvous: every rank's keys are in the store afterwards.
          groups[r].push_back(c10::make_intrusive<c10d::ProcessGroupGloo>(store, r, kWorld, o));
        }
        // Everyone has met before anyone closes: the connections are counted at their peak.
        ++met;
        while (met.load() < kWorld) std::this_thread::sleep_for(milliseconds(1));
        main->add("done", 1);
        main->wait({"counted"});
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  auto observer = client(*s);
  observer->wait({"done"});
  EXPECT_TRUE(await([&] { return observer->add("done", 0) == kWorld; }, "every rank met"));
  const StoreServer::Counters at = s->counters();
  observer->set("counted", bytes("1"));
  for (auto& t : threads) t.join();
  groups.clear();
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  std::cout << "gloo: " << kWorld << " ranks, 2 groups: " << at.storeBytes << " bytes in the store ("
            << at.storeBytes / (kWorld * kWorld) << " per pair of ranks), " << at.connections
            << " connections" << std::endl;
  EXPECT_LE(at.storeBytes, static_cast<uint64_t>(kWorld) * kWorld * 1024) << "the per-pair allowance alone";
  EXPECT_LE(at.connections, limits.maxConnections);
}

// joinRun serves the store with the limits it is given (forWorld(world) when none are).
TEST(StoreBoundsTest, JoinRunServesTheStoreWithTheLimitsGiven) {
  RendezvousOptions o;
  o.masterAddr = "127.0.0.1";
  o.masterPort = fs::testing::freePort();
  o.identity = "store bounds test";
  o.host = "test-host";
  o.preflightTimeout = std::chrono::seconds(30);
  StoreLimits limits;
  limits.maxStoreBytes = 16;
  limits.log = [](const std::string&) {};
  o.storeLimits = limits;
  auto joined = joinRun(o);
  ASSERT_FALSE(joined);
  EXPECT_NE(
      joined.status().message().find("failed on rank 0: store at 127.0.0.1:" + std::to_string(o.masterPort) +
                                     ": set refused: the store would hold"),
      std::string::npos)
      << joined.status().message();
  EXPECT_NE(joined.status().message().find("over its limit of 16 bytes (maxStoreBytes"), std::string::npos)
      << joined.status().message();
}

TEST(StoreBoundsTest, AClientDroppedBeforeItsHelloConnectsAgain) {
  // Something accepts the client's first connection and closes it unanswered (as the server does to the
  // oldest of too many connections waiting for their hello); then the store starts on that port.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  std::string error;
  c10::intrusive_ptr<StoreClient> c;
  std::thread connecting([&] {
    error =
        thrown([&] { c = c10::make_intrusive<StoreClient>("127.0.0.1", port, std::chrono::seconds(60)); });
  });
  const int first = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(first, 0);
  ::close(first);
  ::close(listener);
  auto s = StoreServer::start("127.0.0.1", port);
  ASSERT_TRUE(s) << s.status().message();
  connecting.join();
  EXPECT_EQ(error, "<nothing thrown>");
  ASSERT_TRUE(c);
  c->set("k", bytes("v"));
  EXPECT_EQ(text(c->get("k")), "v");
}

}  // namespace
}  // namespace fs::distributed

// The run's store (store_server.h, store_client.h) over real sockets on
// loopback: c10d's semantics of every operation, blocking gets and waits
// answered by a later set or by their deadline naming the missing keys,
// many clients at once, clients that die mid-message or send too much,
// a client that is not ours, the server bound to exactly MASTER_ADDR
// (127.0.0.2 is not 127.0.0.1; in two network namespaces, the veth address
// answers and loopback does not), a MASTER_ADDR that is not this host's,
// joinRun serving it, and a real ProcessGroupGloo that meets over it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/exception.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
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
#include "tests/fixtures/fixture_unavailable.h"
#include "tests/integration/two_nodes.h"

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

std::unique_ptr<StoreServer> serve(const std::string& addr = "127.0.0.1", int port = 0) {
  auto s = StoreServer::start(addr, port);
  EXPECT_TRUE(s) << s.status().message();
  return s ? std::move(s.value()) : nullptr;
}

c10::intrusive_ptr<StoreClient> client(const StoreServer& s,
                                       milliseconds timeout = std::chrono::seconds(30)) {
  return c10::make_intrusive<StoreClient>(s.boundAddress(), s.port(), timeout);
}

// Waits (bounded: the test fails, never hangs) until the server holds `n` blocked requests.
void awaitBlocked(const StoreServer& s, int n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (s.blockedRequests() != n) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "the server never held " << n << " blocked requests";
    std::this_thread::sleep_for(milliseconds(5));
  }
}

// A raw TCP connection, for what our client never sends. -errno when it cannot connect.
int connectRaw(const std::string& addr, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    return -e;
  }
  return fd;
}

void sendRaw(int fd, const std::string& data) {
  ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
}

// Everything the server sends until it closes the connection.
std::string readToEnd(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string hello() {
  return wire::Writer().u8(static_cast<uint8_t>(wire::Op::kHello)).bytes(wire::kMagic).frame();
}

// What follows the server's answer to hello().
std::string afterHello(const std::string& reply) {
  return reply.size() < wire::kHeaderBytes + 1 ? std::string() : reply.substr(wire::kHeaderBytes + 1);
}

// The text of a kError frame at the start of `reply`.
std::string errorText(const std::string& reply) {
  if (reply.size() < wire::kHeaderBytes + 1 ||
      static_cast<wire::Reply>(reply[wire::kHeaderBytes]) != wire::Reply::kError)
    return "<not an error reply>";
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

TEST(StoreTest, SetOverwritesAndGetReadsBack) {
  auto s = serve();
  auto c = client(*s);
  c->set("k", bytes("one"));
  EXPECT_EQ(text(c->get("k")), "one");
  c->set("k", bytes("two"));
  EXPECT_EQ(text(c->get("k")), "two");
  c->set("empty", {});
  EXPECT_TRUE(c->get("empty").empty());
  std::string binary("\0\x01\xff", 3);
  c->set("bin", bytes(binary));
  EXPECT_EQ(text(c->get("bin")), binary);
}

TEST(StoreTest, AddStartsAtZeroKeepsDecimalTextAndRefusesANonInteger) {
  auto s = serve();
  auto c = client(*s);
  EXPECT_EQ(c->add("n", 5), 5);
  EXPECT_EQ(c->add("n", -7), -2);
  EXPECT_EQ(text(c->get("n")), "-2");
  c->set("word", bytes("abc"));
  const std::string why = thrown([&] { c->add("word", 1); });
  EXPECT_NE(why.find("add on key 'word': its value is not an integer"), std::string::npos) << why;
  EXPECT_EQ(c->add("n", 2), 0) << "the connection stays usable after a refused add";
}

TEST(StoreTest, CheckDeleteKeyAndGetNumKeys) {
  auto s = serve();
  auto c = client(*s);
  EXPECT_EQ(c->getNumKeys(), 0);
  EXPECT_FALSE(c->check({"a"}));
  EXPECT_TRUE(c->check({}));
  c->set("a", bytes("1"));
  c->set("b", bytes("2"));
  EXPECT_TRUE(c->check({"a"}));
  EXPECT_TRUE(c->check({"a", "b"}));
  EXPECT_FALSE(c->check({"a", "b", "c"}));
  EXPECT_EQ(c->getNumKeys(), 2);
  EXPECT_TRUE(c->deleteKey("a"));
  EXPECT_FALSE(c->deleteKey("a"));
  EXPECT_FALSE(c->check({"a"}));
  EXPECT_EQ(c->getNumKeys(), 1);
}

TEST(StoreTest, CompareSetFollowsC10d) {
  auto s = serve();
  auto c = client(*s);
  // A missing key with an expected value: not created; the answer is the expected value.
  EXPECT_EQ(text(c->compareSet("k", bytes("x"), bytes("y"))), "x");
  EXPECT_FALSE(c->check({"k"}));
  // A missing key with an empty expected value: created.
  EXPECT_EQ(text(c->compareSet("k", {}, bytes("first"))), "first");
  // Present and equal: replaced. Present and different: kept. The answer is the value now held.
  EXPECT_EQ(text(c->compareSet("k", bytes("first"), bytes("second"))), "second");
  EXPECT_EQ(text(c->compareSet("k", bytes("first"), bytes("third"))), "second");
  EXPECT_EQ(text(c->get("k")), "second");
}

TEST(StoreTest, AGetOfAMissingKeyIsAnsweredByALaterSet) {
  auto s = serve();
  auto waiter = client(*s);
  auto setter = client(*s);
  std::string got;
  std::thread t([&] { got = text(waiter->get("late")); });
  awaitBlocked(*s, 1);
  setter->set("late", bytes("here"));
  t.join();
  EXPECT_EQ(got, "here");
  EXPECT_EQ(s->blockedRequests(), 0);
}

TEST(StoreTest, AWaitReturnsOnceEveryKeyWasSet) {
  auto s = serve();
  auto waiter = client(*s);
  auto setter = client(*s);
  setter->set("x", bytes("1"));
  std::atomic<bool> done{false};
  std::thread t([&] {
    waiter->wait({"x", "y", "z", "w"});
    done = true;
  });
  awaitBlocked(*s, 1);
  setter->set("y", bytes("2"));
  setter->add("z", 1);
  // A key set and deleted again was set: c10d TCPStore counts it, and so do we.
  setter->set("w", bytes("3"));
  setter->deleteKey("w");
  t.join();
  EXPECT_TRUE(done);
}

TEST(StoreTest, AWaitThatTimesOutNamesTheKeysStillMissing) {
  auto s = serve();
  auto c = client(*s);
  c->set("here", bytes("1"));
  const std::string why = thrown([&] { c->wait({"here", "gone/1", "gone/2"}, milliseconds(200)); });
  EXPECT_NE(why.find("store at 127.0.0.1:" + std::to_string(s->port()) +
                     ": timed out after 0.2 s waiting for key(s) 'gone/1', 'gone/2' (3 asked)"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("'here'"), std::string::npos) << why;
  auto shortTimeout = client(*s, milliseconds(200));
  const std::string get = thrown([&] { shortTimeout->get("never"); });
  EXPECT_NE(get.find("key 'never' was not set within 0.2 s"), std::string::npos) << get;
  bool timeoutError = false;
  try {
    c->wait({"never"}, milliseconds(50));
  } catch (const c10d::TimeoutError&) {
    timeoutError = true;
  }
  EXPECT_TRUE(timeoutError) << "a timeout is a c10d::TimeoutError";
  EXPECT_EQ(text(c->get("here")), "1") << "the connection stays usable after a timeout";
  EXPECT_EQ(s->blockedRequests(), 0);
}

TEST(StoreTest, ManyClientsAtOnce) {
  auto s = serve();
  constexpr int kClients = 16, kAdds = 50;
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        auto c = client(*s);
        c->set("client/" + std::to_string(i), bytes(std::to_string(i)));
        for (int k = 0; k < kAdds; ++k) c->add("counter", 1);
        std::vector<std::string> all;
        for (int j = 0; j < kClients; ++j) all.push_back("client/" + std::to_string(j));
        c->wait(all);
        for (int j = 0; j < kClients; ++j) {
          if (text(c->get(all[j])) != std::to_string(j)) throw std::runtime_error("wrong value of " + all[j]);
        }
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(errors[i], "") << "client " << i;
  EXPECT_EQ(text(client(*s)->get("counter")), std::to_string(kClients * kAdds));
}

TEST(StoreTest, OneClientSharedByThreadsIsSerialised) {
  auto s = serve();
  auto c = client(*s);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 100; ++k) c->add("n", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->add("n", 0), 400);
}

TEST(StoreTest, AClientDyingMidMessageDoesNotDisturbTheOthers) {
  auto s = serve();
  auto waiter = client(*s);
  auto other = client(*s);
  std::string got;
  std::thread t([&] { got = text(waiter->get("after")); });
  awaitBlocked(*s, 1);
  {
    // Half a frame header.
    const int fd = connectRaw("127.0.0.1", s->port());
    ASSERT_GE(fd, 0);
    sendRaw(fd, hello() + std::string("\x10\x00", 2));
    ::close(fd);
  }
  {
    // A whole header and part of the body it announces.
    const int fd = connectRaw("127.0.0.1", s->port());
    ASSERT_GE(fd, 0);
    std::string set =
        wire::Writer().u8(static_cast<uint8_t>(wire::Op::kSet)).bytes("half").bytes("value").frame();
    sendRaw(fd, hello() + set.substr(0, set.size() - 3));
    ::close(fd);
  }
  {
    // A client that dies while its own wait is blocked.
    auto doomed = client(*s);
    const int fd = connectRaw("127.0.0.1", s->port());
    ASSERT_GE(fd, 0);
    sendRaw(fd,
            hello() +
                wire::Writer().u8(static_cast<uint8_t>(wire::Op::kWait)).list({"after"}).i64(60000).frame());
    awaitBlocked(*s, 2);
    ::close(fd);
    awaitBlocked(*s, 1);
  }
  other->set("after", bytes("fine"));
  t.join();
  EXPECT_EQ(got, "fine");
  EXPECT_FALSE(other->check({"half"}));
  EXPECT_EQ(other->getNumKeys(), 1);
}

TEST(StoreTest, AnOversizedMessageIsRefusedAndEndsOnlyThatConnection) {
  auto s = serve();
  auto c = client(*s);
  {
    // A header announcing more than the limit: refused before any body arrives.
    const int fd = connectRaw("127.0.0.1", s->port());
    ASSERT_GE(fd, 0);
    const uint32_t n = wire::kMaxFrameBytes + 1;
    std::string header(4, '\0');
    for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    sendRaw(fd, hello() + header);
    const std::string reply = readToEnd(fd);  // ends: the server closed the connection
    ::close(fd);
    EXPECT_NE(errorText(afterHello(reply))
                  .find("a request of " + std::to_string(n) + " bytes is over the store's limit"),
              std::string::npos)
        << reply.size();
  }
  {
    // A key over the limit inside a frame of allowed size.
    const int fd = connectRaw("127.0.0.1", s->port());
    ASSERT_GE(fd, 0);
    sendRaw(fd, hello() + wire::Writer()
                              .u8(static_cast<uint8_t>(wire::Op::kSet))
                              .bytes(std::string(wire::kMaxKeyBytes + 1, 'k'))
                              .bytes("v")
                              .frame());
    const std::string reply = readToEnd(fd);
    ::close(fd);
    EXPECT_NE(errorText(afterHello(reply)).find("a malformed set request"), std::string::npos);
  }
  // Our client refuses to send what the server would refuse, and its connection stays usable.
  const std::string why = thrown([&] { c->set("big", std::vector<uint8_t>(wire::kMaxValueBytes + 1)); });
  EXPECT_NE(why.find("the value for key 'big' is " + std::to_string(wire::kMaxValueBytes + 1) +
                     " bytes, over the store's limit"),
            std::string::npos)
      << why;
  c->set("small", bytes("ok"));
  EXPECT_EQ(text(c->get("small")), "ok");
  const std::string key = thrown([&] { c->check({std::string(wire::kMaxKeyBytes + 1, 'k')}); });
  EXPECT_NE(key.find("bytes, over the store's limit of " + std::to_string(wire::kMaxKeyBytes)),
            std::string::npos)
      << key;
  EXPECT_EQ(text(c->get("small")), "ok");
}

TEST(StoreTest, AClientThatIsNotOursIsRefused) {
  auto s = serve();
  const int fd = connectRaw("127.0.0.1", s->port());
  ASSERT_GE(fd, 0);
  sendRaw(fd, wire::Writer().u8(static_cast<uint8_t>(wire::Op::kSet)).bytes("k").bytes("v").frame());
  const std::string reply = readToEnd(fd);
  ::close(fd);
  EXPECT_NE(errorText(reply).find("a connection starts with \"flamingo-store/1\""), std::string::npos);
  EXPECT_FALSE(client(*s)->check({"k"}));
}

TEST(StoreTest, TheServerBindsOnlyTheAddressOfMasterAddr) {
  // The whole of 127/8 is loopback on Linux: a server that listened on every address would answer at
  // 127.0.0.1 too.
  // 127.0.0.1 at the same port is then free for another server (bind would fail beside a wildcard
  // listener), and each has its own keys. The kernel may give 127.0.0.2 a port that some other socket
  // holds on 127.0.0.1: then try another port (a wildcard listener would fail every try).
  std::unique_ptr<StoreServer> s1, s2;
  for (int attempt = 0; attempt < 20 && !s1; ++attempt) {
    s2 = serve("127.0.0.2");
    ASSERT_TRUE(s2);
    EXPECT_EQ(s2->boundAddress(), "127.0.0.2");
    const int p = s2->port();
    const int fd = connectRaw("127.0.0.1", p);
    if (fd >= 0) {
      ::close(fd);
      continue;
    }
    EXPECT_EQ(fd, -ECONNREFUSED);
    auto started = StoreServer::start("127.0.0.1", p);
    if (started) s1 = std::move(started.value());
  }
  ASSERT_TRUE(s1) << "every try found 127.0.0.1 taken at the port of the server on 127.0.0.2, as a server "
                     "listening on every address would";
  auto c2 = client(*s2);
  auto c1 = client(*s1);
  c2->set("where", bytes("two"));
  c1->set("where", bytes("one"));
  EXPECT_EQ(text(c2->get("where")), "two");
  EXPECT_EQ(text(c1->get("where")), "one");
}

TEST(StoreTest, AMasterAddrThatIsNotThisHostsIsAClearError) {
  // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of a host.
  auto s = StoreServer::start("192.0.2.1", 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("MASTER_ADDR '192.0.2.1' (192.0.2.1) is not an address of this host"),
            std::string::npos)
      << s.status().message();
  // The wildcard binds every address of the host (issue 42): refused by name, IPv4 and IPv6.
  for (const std::string any : {"0.0.0.0", "::"}) {
    auto wildcard = StoreServer::start(any, 0);
    ASSERT_FALSE(wildcard) << any;
    EXPECT_NE(
        wildcard.status().message().find("MASTER_ADDR '" + any + "' (" + any + ") is the wildcard address"),
        std::string::npos)
        << wildcard.status().message();
  }
  auto unresolved = StoreServer::start("no-such-host.invalid", 0);
  ASSERT_FALSE(unresolved);
  EXPECT_NE(unresolved.status().message().find("MASTER_ADDR 'no-such-host.invalid': cannot resolve it"),
            std::string::npos)
      << unresolved.status().message();
  auto local = StoreServer::start("localhost", 0);
  ASSERT_TRUE(local) << local.status().message();
  EXPECT_TRUE(local.value()->boundAddress() == "::1" || local.value()->boundAddress().rfind("127.", 0) == 0)
      << local.value()->boundAddress();
}

TEST(StoreTest, APortInUseIsNamed) {
  auto first = serve();
  auto second = StoreServer::start("127.0.0.1", first->port());
  ASSERT_FALSE(second);
  EXPECT_NE(second.status().message().find("MASTER_PORT " + std::to_string(first->port()) +
                                           " is in use on 127.0.0.1"),
            std::string::npos)
      << second.status().message();
}

TEST(StoreTest, NoServerIsATimeoutNamingTheAddress) {
  auto s = serve();
  const int port = s->port();
  s.reset();  // the port is free again, and nothing listens on it
  const std::string why = thrown([&] { StoreClient c("127.0.0.1", port, milliseconds(300)); });
  EXPECT_NE(why.find("no store answered at 127.0.0.1:" + std::to_string(port) +
                     " within 0.3 s (last attempt: Connection refused)"),
            std::string::npos)
      << why;
}

TEST(StoreTest, ShutdownEndsBlockedWaitsWithAnErrorAndLaterCallsFail) {
  auto s = serve();
  auto c = client(*s);
  auto other = client(*s);
  std::string why;
  std::thread t([&] { why = thrown([&] { c->wait({"never"}); }); });
  awaitBlocked(*s, 1);
  s.reset();  // joins the serving thread
  t.join();
  EXPECT_NE(why.find("the connection was closed (rank 0 has exited"), std::string::npos) << why;
  const std::string later = thrown([&] { c->set("k", bytes("v")); });
  EXPECT_NE(later.find("the connection was lost earlier"), std::string::npos) << later;
  const std::string fresh = thrown([&] { other->check({"k"}); });
  EXPECT_NE(fresh.find("store at 127.0.0.1:"), std::string::npos) << fresh;
}

TEST(StoreTest, AGlooProcessGroupMeetsOverTheStoreAndAllReduces) {
  // NOTE [Flight recorder and thread ranks] in thread_ranks.h: two threads all-reduce at once.
  ::setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0);
  auto s = serve();
  constexpr int kWorld = 2;
  std::vector<std::string> errors(kWorld);
  std::vector<int64_t> sums(kWorld, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto store = c10::make_intrusive<c10d::PrefixStore>("pg", client(*s));
        auto o = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, r, kWorld, o);
        std::vector<at::Tensor> t = {torch::full({3}, r + 1, torch::kInt64)};
        pg->allreduce(t)->wait();
        sums[r] = t[0].sum().item<int64_t>();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(sums[r], 3 * (1 + 2)) << "rank " << r;
  }
}

// joinRun serves the store through StoreServer: on MASTER_ADDR only, and a MASTER_ADDR of another host is
// rank 0's error, naming it.
TEST(JoinRunStoreTest, RankZeroServesTheStoreOnMasterAddrOnly) {
  RendezvousOptions o;
  o.masterAddr = "127.0.0.2";
  o.masterPort = fs::testing::freePort();
  o.identity = "store test";
  o.host = "test-host";
  o.preflightTimeout = std::chrono::seconds(30);
  auto joined = joinRun(o);
  ASSERT_TRUE(joined) << joined.status().message();
  EXPECT_EQ(connectRaw("127.0.0.1", o.masterPort), -ECONNREFUSED);
  StoreClient peer("127.0.0.2", o.masterPort, std::chrono::seconds(30));
  EXPECT_TRUE(peer.check({"fs/0/preflight/0"}));
}

TEST(JoinRunStoreTest, AMasterAddrOfAnotherHostIsRankZerosError) {
  RendezvousOptions o;
  o.masterAddr = "192.0.2.1";
  o.masterPort = fs::testing::freePort();
  o.preflightTimeout = std::chrono::seconds(2);
  auto joined = joinRun(o);
  ASSERT_FALSE(joined);
  EXPECT_NE(joined.status().message().find(
                "rank 0 could not serve the rendezvous at 192.0.2.1:" + std::to_string(o.masterPort) +
                ": MASTER_ADDR '192.0.2.1' (192.0.2.1) is not an address of this host"),
            std::string::npos)
      << joined.status().message();
}

// ---- two network namespaces (tests/integration/two_nodes.h) ---------------------------------

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The processes of the namespace test, selected by FS_STORE_ROLE: "serve" (node A) serves the store
// on FS_STORE_ADDR and posts "ready"; "probe" (node A) tries loopback at the same port; "reach"
// (node B) reads "ready" over the link.
TEST(StoreWorker, Run) {
  const std::string role = env("FS_STORE_ROLE");
  if (role.empty()) GTEST_SKIP() << "only run as a process of the namespace test below";
  const std::string addr = env("FS_STORE_ADDR");
  const int port = std::atoi(env("FS_STORE_PORT").c_str());
  const auto timeout = std::chrono::seconds(60);
  if (role == "serve") {
    auto s = StoreServer::start(addr, port);
    ASSERT_TRUE(s) << s.status().message();
    StoreClient c(s.value()->boundAddress(), port, timeout);
    c.set("ready", bytes(s.value()->boundAddress()));
    c.wait({"reached", "probed"});
    std::cout << "SERVED " << s.value()->boundAddress() << std::endl;
  } else if (role == "probe") {
    StoreClient c(addr, port, timeout);
    c.get("ready");  // the server listens by now
    const int fd = connectRaw("127.0.0.1", port);
    std::cout << "LOOPBACK " << (fd == -ECONNREFUSED ? std::string("refused") : std::to_string(fd))
              << std::endl;
    if (fd >= 0) ::close(fd);
    c.set("probed", bytes("1"));
  } else if (role == "reach") {
    StoreClient c(addr, port, timeout);
    std::cout << "REACHED " << text(c.get("ready")) << std::endl;
    c.set("reached", bytes("1"));
  }
}

TEST(StoreNetnsTest, TheStoreAnswersOnTheRunsInterfaceAndNotOnLoopback) {
  const std::string ip = integration::findIpProgram();
  if (ip.empty()) FS_FIXTURE_UNAVAILABLE("iproute2's ip is needed (scripts/install-deps.sh installs it)");
  integration::TwoNodes nodes(ip);
  if (!nodes.ok())
    FS_FIXTURE_UNAVAILABLE("cannot create network namespaces here (needs root / CAP_NET_ADMIN)");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto dir = std::filesystem::temp_directory_path() / ("store_netns_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int port = 29000 + ::getpid() % 1000;  // inside fresh namespaces every port is free
  std::vector<pid_t> pids;
  std::vector<std::filesystem::path> logs;
  for (const auto& [role, first] :
       std::vector<std::pair<std::string, bool>>{{"serve", true}, {"probe", true}, {"reach", false}}) {
    logs.push_back(dir / (role + ".log"));
    pids.push_back(fs::testing::spawnWithEnv(nodes.in(first, {self, "--gtest_filter=StoreWorker.Run"}),
                                             {{"FS_STORE_ROLE", role},
                                              {"FS_STORE_ADDR", nodes.masterAddress()},
                                              {"FS_STORE_PORT", std::to_string(port)}},
                                             logs.back()));
  }
  const auto exits = fs::testing::waitAll(pids, logs, std::chrono::seconds(120));
  std::filesystem::remove_all(dir);
  for (const auto& e : exits) EXPECT_EQ(e.code, 0) << e.output;
  EXPECT_NE(exits[0].output.find("SERVED " + nodes.masterAddress()), std::string::npos) << exits[0].output;
  EXPECT_NE(exits[1].output.find("LOOPBACK refused"), std::string::npos) << exits[1].output;
  EXPECT_NE(exits[2].output.find("REACHED " + nodes.masterAddress()), std::string::npos) << exits[2].output;
}

}  // namespace
}  // namespace fs::distributed

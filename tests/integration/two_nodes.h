// Two "nodes" on one machine for the integration tests: two network
// namespaces joined by a veth pair (10.231.<k>.1 and .2), so an agent started
// in each sees only its own address and reaches the other over the link, as
// two hosts would. The file system is shared (a run directory on a shared
// file system, as multi-node runs need).
//
// Needs root (or CAP_NET_ADMIN) and iproute2's `ip`; ok() is false where the
// namespaces cannot be made, and the test should GTEST_SKIP then.
//
// Clean-up happens in the destructor, so an ASSERT that leaves the test early
// still removes both namespaces; processes still running inside them (ranks a
// killed agent left behind) are killed first by pid, since deleting a
// namespace does not end what runs in it.
//
// Thread-safety: none; one test thread owns an instance.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace fs::integration {

// The first of `candidates` that is an executable file, or "".
inline std::string findProgram(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

// iproute2's `ip`, or "" when not installed.
inline std::string findIpProgram() {
  return findProgram({"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"});
}

class TwoNodes {
 public:
  explicit TwoNodes(std::string ip) : ip_(std::move(ip)) {
    // Names from our pid: test binaries that CTest runs in parallel do not collide.
    const std::string id = std::to_string(::getpid() % 100000);
    a_ = "fsA" + id;
    b_ = "fsB" + id;
    const std::string va = "fsva" + id, vb = "fsvb" + id;
    subnet_ = "10.231." + std::to_string(::getpid() % 250) + ".";
    // Left over by an earlier process with our pid that was killed before its destructor ran.
    remove();
    ok_ = run({"netns", "add", a_}) && run({"netns", "add", b_}) &&
          run({"link", "add", va, "type", "veth", "peer", "name", vb}) &&
          run({"link", "set", va, "netns", a_}) && run({"link", "set", vb, "netns", b_}) &&
          run({"-n", a_, "addr", "add", subnet_ + "1/24", "dev", va}) &&
          run({"-n", b_, "addr", "add", subnet_ + "2/24", "dev", vb}) &&
          run({"-n", a_, "link", "set", va, "up"}) && run({"-n", b_, "link", "set", vb, "up"}) &&
          run({"-n", a_, "link", "set", "lo", "up"}) && run({"-n", b_, "link", "set", "lo", "up"});
    if (!ok_) run({"link", "del", va});  // a veth not yet moved into a namespace
  }
  ~TwoNodes() { remove(); }
  TwoNodes(const TwoNodes&) = delete;
  TwoNodes& operator=(const TwoNodes&) = delete;

  bool ok() const { return ok_; }
  // Node A's address, as node B reaches it: the master of a run.
  std::string masterAddress() const { return subnet_ + "1"; }
  std::string nodeAddress(bool first) const { return subnet_ + (first ? "1" : "2"); }
  // `argv` run inside node A (`first`) or node B.
  std::vector<std::string> in(bool first, std::vector<std::string> argv) const {
    std::vector<std::string> out = {ip_, "netns", "exec", first ? a_ : b_};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }

 private:
  void remove() const {
    for (const auto& ns : {a_, b_}) {
      killProcessesIn(ns);
      run({"netns", "del", ns});  // its veth end goes with it
    }
  }
  void killProcessesIn(const std::string& ns) const {
    FILE* p = ::popen((ip_ + " netns pids " + ns + " 2>/dev/null").c_str(), "r");
    if (!p) return;
    long pid = 0;
    while (std::fscanf(p, "%ld", &pid) == 1) {
      if (pid > 1 && pid != ::getpid()) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
    ::pclose(p);
  }
  bool run(std::vector<std::string> args) const {
    args.insert(args.begin(), ip_);
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    return std::system((cmd + ">/dev/null 2>&1").c_str()) == 0;
  }

  std::string ip_, a_, b_, subnet_;
  bool ok_ = false;
};

}  // namespace fs::integration

#include "app/cluster/preflight.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "app/cluster/preflight_checks.h"
#include "backend/protocol/config/run_location.h"

namespace fs::app::cluster {
namespace {

using remote::CommandResult;
using remote::ExecOptions;
using Result = protocol::StatusOr<CommandResult>;

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What one host's first phase gathered.
struct HostState {
  RowContext ctx;
  remote::Host* host = nullptr;
  bool usable = false;  // the engine ran and printed version JSON
  PreflightRow engine, disk, resources;
  bool clockOk = false;
  std::string clockError;
  double offset = 0;       // host clock - this computer's clock, seconds
  double uncertainty = 0;  // half the bracket, seconds
};

std::vector<std::string> engineArgv(const HostState& h, std::vector<std::string> args) {
  args.insert(args.begin(), h.ctx.engine_path.empty() ? "flamingo-train" : h.ctx.engine_path);
  return args;
}

// NOTE [Measuring clock skew]: `probe clock` prints the host's unix time in ms;
// this computer's clock brackets the whole Host::run (t0 before, t1 after) and
// the midpoint stands for the moment it was read, give or take (t1 - t0) / 2
// (process start and SSH latency are not symmetric, hence the bound). `probe
// host` also prints the time, but it waits for nvidia-smi, which widens the
// bracket, so the clock has a command of its own. Offsets to this computer are
// differenced between hosts: node 0 is the reference of every other node (the
// ranks' clocks must agree with each other), and node 0 is judged against this
// computer (the monitor compares this computer's clock with rank 0's events).
void firstPhase(HostState& h, const PreflightRequest& req) {
  ExecOptions opts;
  opts.timeout_ms = req.command_timeout_ms;
  opts.cancel = req.cancel;
  const Result version = h.host->run(engineArgv(h, {"version", "--json"}), opts);
  h.engine = judgeEngine(h.ctx, version, req.require_engine, &h.usable);
  if (!h.usable) {
    const std::string why = "flamingo-train did not run on " + h.ctx.host;
    h.disk = skippedRow(h.ctx, CheckKind::kDisk, why);
    h.resources = skippedRow(h.ctx, CheckKind::kResources, why);
    return;
  }
  // The engine is given the root as the launch will use it: "~/x" is x under the login directory.
  auto root = protocol::hostRunRoot(req.run_root);
  const std::string runRoot = root ? root.value() : req.run_root;
  auto facts = commandJson(h.ctx, "probe host",
                           h.host->run(engineArgv(h, {"probe", "host", "--run-root", runRoot}), opts));
  if (facts) {
    h.disk = judgeDisk(h.ctx, *facts);
    h.resources = judgeResources(h.ctx, *facts, req.gpus_per_node);
  } else {
    for (auto [row, kind] :
         {std::pair{&h.disk, CheckKind::kDisk}, std::pair{&h.resources, CheckKind::kResources}})
      *row = {h.ctx.host, h.ctx.node, kind, CheckStatus::kFail, "probe failed", facts.status().message()};
  }
  const double t0 = nowSeconds();
  auto clock = commandJson(h.ctx, "probe clock", h.host->run(engineArgv(h, {"probe", "clock"}), opts));
  const double t1 = nowSeconds();
  if (clock && clock->contains("unix_time_ms") && (*clock)["unix_time_ms"].is_number()) {
    h.clockOk = true;
    h.offset = (*clock)["unix_time_ms"].get<double>() / 1000.0 - (t0 + t1) / 2;
    h.uncertainty = (t1 - t0) / 2;
  } else {
    h.clockError = clock ? h.ctx.host + ": probe clock printed no unix_time_ms" : clock.status().message();
  }
}

PreflightRow clockRow(const HostState& h, const HostState& node0) {
  if (!h.usable) return skippedRow(h.ctx, CheckKind::kClock, "flamingo-train did not run on " + h.ctx.host);
  if (!h.clockOk)
    return {h.ctx.host, h.ctx.node, CheckKind::kClock, CheckStatus::kFail, "probe failed", h.clockError};
  if (&h == &node0) return judgeClock(h.ctx, h.offset, h.uncertainty, "this computer");
  if (!node0.clockOk) return skippedRow(h.ctx, CheckKind::kClock, "node 0's clock was not read");
  return judgeClock(h.ctx, h.offset - node0.offset, h.uncertainty + node0.uncertainty, node0.ctx.host);
}

std::string makeNonce() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

// NOTE [Rendezvous check]: node 0 runs `probe listen --self-check ADDRESS` on
// the rendezvous port (on a thread: Host::run returns only when the listener
// ends) while every other node runs `probe connect` to the rendezvous address.
// Node 0's own check (its ranks reach MASTER_ADDR too) runs inside the
// listener, so no host ever runs two commands at once: Host implementations
// may serialise calls. Connections refused are retried for connect_wait_s,
// since the listener may start after a connection attempt. The listener stops
// after one answer per node, or connect_timeout_s + 5 s after it started (when
// some node could not reach it: every check ends within connect_timeout_s, retries
// included; the 5 s allow for starting the commands); when it cannot listen, the
// connection checks are cancelled. It binds with SO_REUSEADDR, as c10d's
// TCPStore does, so connections it closed (TIME_WAIT) do not keep the rank 0
// store off the port afterwards.
std::vector<PreflightRow> rendezvousRows(std::vector<HostState>& hosts, const PreflightRequest& req) {
  std::vector<PreflightRow> rows(hosts.size());
  HostState& node0 = hosts[0];
  const std::string port = std::to_string(req.rendezvous_port);
  const std::string target = req.rendezvous_address + ":" + port;
  if (req.rendezvous_address.empty()) {
    for (auto& h : hosts)
      rows[h.ctx.node] = {h.ctx.host,
                          h.ctx.node,
                          CheckKind::kRendezvous,
                          CheckStatus::kFail,
                          "no address",
                          h.ctx.node == 0 ? node0.ctx.host + ": set node 0's rendezvous address" : ""};
    return rows;
  }
  for (auto& h : hosts) {
    if (!node0.usable || !h.usable)
      rows[h.ctx.node] = skippedRow(h.ctx, CheckKind::kRendezvous,
                                    "flamingo-train did not run on " + (node0.usable ? h : node0).ctx.host);
  }
  if (!node0.usable) return rows;
  const std::string nonce = makeNonce();
  std::vector<HostState*> connecting;
  for (size_t i = 1; i < hosts.size(); ++i) {
    if (hosts[i].usable) connecting.push_back(&hosts[i]);
  }

  std::atomic<bool> stopListener{false}, stopConnects{false};
  std::atomic<int> running{static_cast<int>(connecting.size()) + 1};
  Result listened = protocol::Status::ioError("not run");
  std::vector<Result> connected(connecting.size(), protocol::Status::ioError("not run"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    const int listenS = req.connect_timeout_s + 5;  // a connection check ends within connect_timeout_s
    ExecOptions o;
    o.timeout_ms = (listenS + 30) * 1000;
    o.cancel = &stopListener;
    listened = node0.host->run(
        engineArgv(node0, {"probe", "listen", "--port", port, "--nonce", nonce, "--timeout-s",
                           std::to_string(listenS), "--connections", std::to_string(connecting.size() + 1),
                           "--self-check", req.rendezvous_address}),
        o);
    // It could not listen: nobody will answer the others.
    if (listened && listened->exit_code != 0) stopConnects = true;
    --running;
  });
  for (size_t i = 0; i < connecting.size(); ++i) {
    threads.emplace_back([&, i] {
      ExecOptions o;
      o.timeout_ms = (req.connect_timeout_s + 30) * 1000;
      o.cancel = &stopConnects;
      connected[i] = connecting[i]->host->run(
          engineArgv(*connecting[i], {"probe", "connect", "--host", req.rendezvous_address, "--port", port,
                                      "--nonce", nonce, "--timeout-s", std::to_string(req.connect_timeout_s),
                                      "--wait-s", std::to_string(req.connect_wait_s)}),
          o);
      --running;
    });
  }
  while (running.load() > 0) {
    if (req.cancel && req.cancel->load()) stopListener = stopConnects = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : threads) t.join();

  // Node 0: the listener, and its own connection to the rendezvous address.
  auto heard = commandJson(node0.ctx, "probe listen", listened);
  const bool bound = heard && heard->value("listening", false);
  PreflightRow& first = rows[0];
  first = {node0.ctx.host, 0, CheckKind::kRendezvous, CheckStatus::kOk, "reaches " + target, {}};
  if (!bound) {
    first.status = CheckStatus::kFail;
    first.value = "cannot listen on port " + port;
    first.action = heard ? node0.ctx.host + ": " + heard->value("error", std::string("could not listen"))
                         : heard.status().message();
  } else if (const auto self = heard->value("self_check", nlohmann::json::object());
             !self.value("reachable", false)) {
    first.status = CheckStatus::kFail;
    first.value = "cannot reach " + target;
    first.action = node0.ctx.host + ": cannot reach its own rendezvous address (" +
                   self.value("error", std::string("no answer")) + "); make " + req.rendezvous_address +
                   " an address of node 0 (" + node0.ctx.host + "), which its own ranks reach too";
  }
  for (size_t i = 0; i < connecting.size(); ++i) {
    HostState& h = *connecting[i];
    PreflightRow& row = rows[h.ctx.node];
    row = {h.ctx.host, h.ctx.node, CheckKind::kRendezvous, CheckStatus::kOk, "reaches " + target, {}};
    auto j = commandJson(h.ctx, "probe connect", connected[i]);
    if (j && j->value("reachable", false)) continue;
    if (listened && listened->exit_code != 0) {
      row = skippedRow(h.ctx, CheckKind::kRendezvous, "node 0 could not listen");
      continue;
    }
    row.status = CheckStatus::kFail;
    row.value = "cannot reach " + target;
    row.action = h.ctx.host + ": cannot reach node 0's rendezvous port (" +
                 (j ? j->value("error", std::string("unreachable")) : j.status().message()) + "); make " +
                 req.rendezvous_address + " node 0's (" + node0.ctx.host + ") address as " + h.ctx.host +
                 " sees it, and let TCP port " + port + " through any firewall between them";
  }
  return rows;
}

}  // namespace

std::string_view toString(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkipped:
      return "skipped";
  }
  return "?";
}

std::string_view toString(CheckKind k) {
  switch (k) {
    case CheckKind::kEngine:
      return "engine";
    case CheckKind::kDisk:
      return "disk";
    case CheckKind::kResources:
      return "resources";
    case CheckKind::kClock:
      return "clock";
    case CheckKind::kRendezvous:
      return "rendezvous";
  }
  return "?";
}

bool PreflightTable::ok() const {
  return worst() != CheckStatus::kFail;
}

CheckStatus PreflightTable::worst() const {
  auto rank = [](CheckStatus s) {
    return s == CheckStatus::kFail ? 3 : s == CheckStatus::kWarn ? 2 : s == CheckStatus::kSkipped ? 1 : 0;
  };
  CheckStatus w = CheckStatus::kOk;
  for (const auto& r : rows) {
    if (rank(r.status) > rank(w)) w = r.status;
  }
  return w;
}

const PreflightRow* PreflightTable::find(int node, CheckKind check) const {
  for (const auto& r : rows) {
    if (r.node == node && r.check == check) return &r;
  }
  return nullptr;
}

std::string PreflightTable::toText() const {
  size_t hostWidth = 4;
  for (const auto& r : rows) hostWidth = std::max(hostWidth, r.host.size());
  auto pad = [](std::string s, size_t n) {
    s.resize(std::max(n, s.size()), ' ');
    return s;
  };
  std::string out = pad("host", hostWidth + 2) + pad("check", 12) + pad("status", 9) + "value\n";
  for (const auto& r : rows)
    out += pad(r.host, hostWidth + 2) + pad(std::string(toString(r.check)), 12) +
           pad(std::string(toString(r.status)), 9) + r.value + "\n";
  for (const auto& r : rows) {
    if (!r.action.empty()) out += "- " + r.action + "\n";
  }
  return out;
}

PreflightTable runPreflight(const PreflightRequest& req) {
  std::vector<HostState> hosts(req.hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    hosts[i].host = req.hosts[i].host;
    hosts[i].ctx = {req.hosts[i].host->name(), static_cast<int>(i), req.hosts[i].engine_path};
  }
  {
    std::vector<std::thread> threads;
    for (auto& h : hosts) threads.emplace_back([&h, &req] { firstPhase(h, req); });
    for (auto& t : threads) t.join();
  }
  PreflightTable table;
  if (hosts.empty()) return table;
  const bool cancelled = req.cancel && req.cancel->load();
  std::vector<PreflightRow> rendezvous =
      cancelled ? std::vector<PreflightRow>(hosts.size()) : rendezvousRows(hosts, req);
  for (auto& h : hosts) {
    if (cancelled) rendezvous[h.ctx.node] = skippedRow(h.ctx, CheckKind::kRendezvous, "cancelled");
    table.rows.push_back(h.engine);
    table.rows.push_back(h.disk);
    table.rows.push_back(h.resources);
    table.rows.push_back(clockRow(h, hosts[0]));
    table.rows.push_back(rendezvous[h.ctx.node]);
  }
  return table;
}

}  // namespace fs::app::cluster

// probe: what the app's pre-flight (app/cluster/preflight.h) asks each host
// before a multi-node launch. Torch-free, so the tools-only build has it too.
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/probe_host.h"
#include "backend/cli/probe_net.h"

namespace fs::cli {
namespace {

const char* const kUsage =
    "usage: flamingo-train probe host --run-root DIR\n"
    "       flamingo-train probe clock\n"
    "       flamingo-train probe listen --port P --nonce N [--timeout-s S] [--connections C] [--self-check "
    "H]\n"
    "       flamingo-train probe connect --host H --port P --nonce N [--timeout-s S] [--wait-s W]\n";

const char* const kHelp =
    "\nFacts the app checks on every host before a launch, each printed as one JSON object on one line.\n\n"
    "host: this machine, e.g.\n"
    "  {\"hostname\":\"node1\",\"cores\":{\"online\":16,\"usable\":16},\n"
    "   \"memory\":{\"total_bytes\":...,\"available_bytes\":...},\n"
    "   \"run_root\":{\"path\":DIR,\"exists\":true,\"writable\":true,\"free_path\":DIR,\"free_bytes\":...},\n"
    "   "
    "\"gpus\":{\"nvidia_smi\":true,\"devices\":[{\"index\":0,\"name\":\"...\",\"memory_total_mib\":81559}]},"
    "\n"
    "   \"unix_time_ms\":...}\n"
    "  writable: a file could be created (and was removed) in DIR. A missing DIR is created by the launch:\n"
    "  free_path is then its nearest existing parent, where writable and free_bytes were measured.\n"
    "  run_root.error and gpus.error say what went wrong; gpus lists nothing without nvidia-smi on PATH.\n"
    "  Exit 0 whatever the facts are.\n\n"
    "clock: {\"unix_time_ms\":...}. Run it bracketed by the caller's clock; the midpoint of the bracket\n"
    "  is the caller's time for it, give or take half the bracket.\n\n"
    "listen: binds 0.0.0.0:P, prints {\"listening\":true,\"port\":P}, then answers every connection with\n"
    "  the line \"flamingo-probe N\" until S seconds pass (default 30) or C connections were answered.\n"
    "  At the end it prints {\"listening\":true,\"port\":P,\"answered\":N}; with --self-check H it also\n"
    "  connects to H:P from here once listening (as connect does) and adds \"self_check\": connect's "
    "object.\n"
    "  Exit 0; 1 with {\"listening\":false,\"port\":P,\"error\":...} when the port cannot be bound.\n\n"
    "connect: connects to H:P and reads the line; only \"flamingo-probe N\" counts, so another program\n"
    "  on the port is not mistaken for the probe. Prints {\"reachable\":true,\"host\":H,\"port\":P} (exit "
    "0)\n"
    "  or {\"reachable\":false,\"host\":H,\"port\":P,\"error\":...} (exit 1). A refused connection is\n"
    "  retried for W seconds (default 0), for a listener started at the same time. S bounds it all\n"
    "  (default 10).\n\n"
    "Exit 2 for bad options.\n\n";

}  // namespace

const std::vector<OptionSpec> kProbeOptions = {
    {"run-root", true, false, "DIR", "host: the run root to check (required)"},
    {"port", true, false, "P", "listen, connect: the TCP port (listen: 0 = any free one)"},
    {"host", true, false, "H", "connect: the host name or address to reach"},
    {"nonce", true, false, "N", "listen, connect: the token in the answer line ([A-Za-z0-9_.-], 1-64)"},
    {"timeout-s", true, false, "S", "listen: how long to listen; connect: the limit for the whole check"},
    {"connections", true, false, "C",
     "listen: stop after C answered connections (default 0: at the timeout)"},
    {"wait-s", true, false, "W", "connect: retry a refused connection for this long (default 0)"},
    {"self-check", true, false, "H", "listen: also connect to H:P from this host (counts as a connection)"},
    {"help", false, false, "", "Show this help"},
};

namespace {

// The options each subcommand takes (the rest are errors naming the subcommand).
const std::vector<std::pair<std::string, std::vector<std::string>>> kAllowed = {
    {"host", {"run-root"}},
    {"clock", {}},
    {"listen", {"port", "nonce", "timeout-s", "connections", "self-check"}},
    {"connect", {"host", "port", "nonce", "timeout-s", "wait-s"}},
};

protocol::StatusOr<int> wholeNumber(const ParsedArgs& args, const std::string& flag, int fallback, int min,
                                    int max) {
  if (!args.has(flag)) return fallback;
  const std::string value = args.get(flag);
  int v = 0;
  const auto* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end || v < min || v > max)
    return protocol::Status::invalidArgument("--" + flag + ": '" + value + "' is not a whole number from " +
                                             std::to_string(min) + " to " + std::to_string(max));
  return v;
}

}  // namespace

int runProbe(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kProbeOptions);
  auto fail = [&](const std::string& message) {
    io.err << "flamingo-train probe: " << message << "\n" << kUsage;
    return kExitUsage;
  };
  if (!parsed) return fail(parsed.status().message());
  if (parsed->has("help")) {
    io.out << kUsage << kHelp << formatOptions(kProbeOptions);
    return kExitOk;
  }
  if (parsed->positionals.empty()) return fail("which probe? host, clock, listen or connect");
  const std::string what = parsed->positionals[0];
  if (parsed->positionals.size() > 1) return fail("unexpected argument '" + parsed->positionals[1] + "'");
  const std::vector<std::string>* allowed = nullptr;
  for (const auto& [name, options] : kAllowed) {
    if (name == what) allowed = &options;
  }
  if (!allowed) return fail("unknown probe '" + what + "' (host, clock, listen or connect)");
  for (const auto& [option, values] : parsed->values) {
    if (std::find(allowed->begin(), allowed->end(), option) == allowed->end())
      return fail(what + ": --" + option + " does not apply");
  }
  auto require = [&](const std::string& option) -> bool { return parsed->has(option); };

  if (what == "host") {
    if (!require("run-root")) return fail("host: --run-root DIR is required");
    io.out << probeHost(parsed->get("run-root")).dump() << "\n";
    return kExitOk;
  }
  if (what == "clock") {
    io.out << nlohmann::json{{"unix_time_ms", unixTimeMs()}}.dump() << "\n";
    return kExitOk;
  }
  if (!require("port")) return fail(what + ": --port P is required");
  if (!require("nonce")) return fail(what + ": --nonce N is required");
  const std::string nonce = parsed->get("nonce");
  if (!validNonce(nonce)) return fail("--nonce: '" + nonce + "' is not 1-64 characters of A-Z a-z 0-9 _ . -");
  auto port = wholeNumber(*parsed, "port", 0, what == "listen" ? 0 : 1, 65535);
  if (!port) return fail(port.status().message());
  auto timeout = wholeNumber(*parsed, "timeout-s", what == "listen" ? 30 : 10, 1, 86400);
  if (!timeout) return fail(timeout.status().message());

  if (what == "listen") {
    auto connections = wholeNumber(*parsed, "connections", 0, 0, 1'000'000);
    if (!connections) return fail(connections.status().message());
    ListenOptions o{*port, nonce, *timeout, *connections, parsed->get("self-check")};
    const auto result = listenAndAnswer(o, [&](const nlohmann::json& listening) {
      io.out << listening.dump() << "\n";
      io.out.flush();
    });
    if (result.value("listening", false)) {
      io.out << result.dump() << "\n";
      return kExitOk;
    }
    io.out << result.dump() << "\n";
    io.err << "flamingo-train probe listen: " << result.value("error", "") << "\n";
    return kExitFailure;
  }
  if (!require("host")) return fail("connect: --host H is required");
  auto wait = wholeNumber(*parsed, "wait-s", 0, 0, 86400);
  if (!wait) return fail(wait.status().message());
  ConnectOptions o{parsed->get("host"), *port, nonce, *timeout, *wait};
  const auto result = connectAndCheck(o);
  io.out << result.dump() << "\n";
  return result.value("reachable", false) ? kExitOk : kExitFailure;
}

}  // namespace fs::cli

#include "studio/remote/cli_context.h"

#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {

std::vector<OptionSpec> globalOptionSpecs() {
  return {
      {"ssh-config", true, false, "FILE", "OpenSSH client config (default ~/.ssh/config)"},
      {"known-hosts", true, false, "FILE", "known_hosts file (default: as the ssh config says)"},
      {"batch", false, false, "", "Never ask: unknown host keys are refused, passphrases are not asked for"},
      {"help", false, false, "", "Show this help"},
  };
}

GlobalOptions globalOptions(const ParsedArgs& args) {
  GlobalOptions o;
  o.sshConfig = args.get("ssh-config");
  o.knownHosts = args.get("known-hosts");
  o.batch = args.has("batch");
  return o;
}

protocol::StatusOr<RunLocation> parseRunLocation(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return protocol::Status::invalidArgument(
        "'" + text + "': expected HOST:RUN_DIR (e.g. node-a:flamingo-runs/tiny-20261127-101500)");
  }
  return RunLocation{text.substr(0, colon), text.substr(colon + 1)};
}

CommandStart startCommand(const std::vector<std::string>& args, const char* usage, const char* help,
                          std::vector<OptionSpec> specs, std::size_t minPositionals,
                          std::size_t maxPositionals, std::ostream& out, std::ostream& err) {
  CommandStart start;
  for (auto& g : globalOptionSpecs()) specs.push_back(std::move(g));
  auto parsed = parseArgs(args, specs);
  if (!parsed) {
    err << "flamingo-studio remote: " << parsed.status().message() << "\n" << usage;
    start.exitCode = kExitUsage;
    return start;
  }
  if (parsed->has("help")) {
    out << usage << help << "\noptions:\n" << describeOptions(specs);
    start.exitCode = kExitOk;
    return start;
  }
  const std::size_t n = parsed->positionals.size();
  if (n < minPositionals || n > maxPositionals) {
    err << "flamingo-studio remote: expected " << minPositionals
        << (maxPositionals != minPositionals ? " to " + std::to_string(maxPositionals) : std::string())
        << " argument(s), got " << n << "\n"
        << usage;
    start.exitCode = kExitUsage;
    return start;
  }
  start.args = std::move(parsed.value());
  start.ctx = std::make_unique<CliContext>(globalOptions(start.args), out, err);
  return start;
}

}  // namespace fs::studio::remote

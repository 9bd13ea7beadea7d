// What every `remote` command shares: the global options, the Hosts opened so far
// (one session per host, reused by every command step), and the terminal prompter
// for host keys and passphrases.
//
// Thread-safety: the main thread only (Hosts themselves are thread-safe).
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "backend/protocol/status.h"
#include "studio/remote/cli_args.h"

namespace fs::studio::remote {

struct GlobalOptions {
  std::string sshConfig;   // empty: ~/.ssh/config (and /etc/ssh/ssh_config)
  std::string knownHosts;  // empty: as the ssh config says (~/.ssh/known_hosts)
  bool batch = false;      // never ask: unknown host keys are refused, encrypted keys without an agent fail
};

// The options every command takes, for its help and its parser.
std::vector<OptionSpec> globalOptionSpecs();
GlobalOptions globalOptions(const ParsedArgs& args);

class CliContext {
 public:
  CliContext(GlobalOptions options, std::ostream& out, std::ostream& err);
  ~CliContext();

  // "local" -> this machine; anything else through SSH. Cached per name.
  protocol::StatusOr<std::shared_ptr<app::remote::Host>> open(const std::string& name);
  // The address `name` resolves to through the ssh config (HostName), or the name.
  std::string addressOf(const std::string& name);

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  const GlobalOptions& options() const { return options_; }

 private:
  struct Ssh;  // the ssh config and the prompter (cli_ssh.cpp)
  GlobalOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  std::map<std::string, std::shared_ptr<app::remote::Host>> hosts_;
  std::unique_ptr<Ssh> ssh_;
};

// "HOST:RUN_DIR" -> {HOST, RUN_DIR}; an error naming the argument otherwise.
struct RunLocation {
  std::string host;
  std::string runDir;
};
protocol::StatusOr<RunLocation> parseRunLocation(const std::string& text);

}  // namespace fs::studio::remote

namespace fs::studio::remote {

// A command's start: parses `args` with `specs` + the global options, answers --help
// (usage, help, options; exit 0) and bad usage (exit 2), checks the positional count.
struct CommandStart {
  ParsedArgs args;
  std::unique_ptr<CliContext> ctx;
  int exitCode = -1;  // >= 0: return it now
};
CommandStart startCommand(const std::vector<std::string>& args, const char* usage, const char* help,
                          std::vector<OptionSpec> specs, std::size_t minPositionals,
                          std::size_t maxPositionals, std::ostream& out, std::ostream& err);

}  // namespace fs::studio::remote

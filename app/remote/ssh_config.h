// OpenSSH client configuration (ssh_config(5)) read by our own parser, and the
// resolution of a destination ("alias", "host", "user@host:port") into the
// HostSpec an SshConnection connects with.
//
// Supported: Host blocks (several patterns per line, * ? and !negation,
// case-sensitive as in ssh 9.2), first value wins, Include (globs; relative paths under
// ~/.ssh for the user file and /etc/ssh for the system one), keywords in any
// case, "key value" / "key=value", quoted values, # comments. Match blocks
// are skipped (never applied) except "Match all", and each is a warning in
// HostSpec::warnings naming its file:line, as are HostKeyAlias and
// "HashKnownHosts yes" where they apply. Other keywords this app does not use
// are ignored. Paths: NOTE [Paths in ssh_config].
// NOTE [Why our own ssh_config parser].
//
// Thread-safety: SshConfig is immutable after load(); const calls from any
// thread. Blocking file I/O in load().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app::remote {

// NOTE [Why our own ssh_config parser]
// libssh's ssh_options_parse_config() reads the user's real files, knows only
// part of the grammar (no negation in older versions, Match partly) and would
// turn ProxyJump into an `ssh -W` ProxyCommand that reads the user's real
// known_hosts. We need the resolved values ourselves (to show them in the GUI,
// to verify every hop's host key with our own prompts, to test against a
// generated config), so we parse and resolve here and hand libssh only
// explicit options. `ssh -G` is the oracle in tests/app/remote/ssh_config_test.

// NOTE [Paths in ssh_config]
// As ssh does (ssh_config(5) TOKENS and ENVIRONMENT VARIABLES):
// UserKnownHostsFile, IdentityFile and IdentityAgent expand a leading ~ or
// ~user, then ${VAR} from the environment and the tokens %% %C %d %h %i %k %L
// %l %n %p %r %u; an unset variable or an unknown token is an error naming
// file:line, as ssh refuses them. GlobalKnownHostsFile is taken literally, as
// ssh does. "none" (alone) means no file, no agent. A path still relative
// after expansion is an error naming file:line and the value: ssh would read
// it from whatever the working directory is. IdentityAgent SSH_AUTH_SOCK and
// $VAR name the environment variable holding the socket.

enum class StrictHostKeyChecking { kAsk, kYes, kNo, kAcceptNew };

struct HostSpec {
  std::string alias;     // the destination's host part as the user wrote it
  std::string hostname;  // HostName (%h expanded), else the alias in lower case
  std::string user;      // User, else the local user
  int port = 22;
  std::vector<std::string> identity_files;  // expanded (NOTE [Paths in ssh_config])
  bool identities_only = false;
  // IdentityAgent (expanded); empty or "SSH_AUTH_SOCK": $SSH_AUTH_SOCK; "none": no agent.
  std::string identity_agent;
  // ProxyJump hops in order ([user@]host[:port], each resolved through the
  // config again when connecting); empty for none.
  std::vector<std::string> proxy_jump;
  std::vector<std::string> user_known_hosts_files;    // expanded; empty for "none"
  std::vector<std::string> global_known_hosts_files;  // read only, never written; empty for "none"
  StrictHostKeyChecking strict_host_key_checking = StrictHostKeyChecking::kAsk;
  int server_alive_interval = 0;  // seconds; 0: not set (SshConnection uses 15)
  int server_alive_count_max = 3;
  int connect_timeout = 0;  // seconds; 0: not set (SshConnection uses 15)
  // "file:line: ..." for what the config says and we ignore (Match blocks,
  // HostKeyAlias, HashKnownHosts yes); the Prompter is given each once per connection.
  std::vector<std::string> warnings;
};

struct SshConfigOptions {
  // "" for none. The defaults are the user's file and the system file.
  std::string user_config = "~/.ssh/config";
  std::string system_config = "/etc/ssh/ssh_config";
  // For ~ and %d; empty: the local user's home directory from the passwd file.
  std::string home;
  // For %u and the default User; empty: the local user's name.
  std::string local_user;
};

class SshConfig {
 public:
  // Reads the files (a missing file is an empty one; an unreadable or
  // malformed one is an error naming file:line).
  static protocol::StatusOr<SshConfig> load(const SshConfigOptions& options = {});
  // The same, from text (as if it were the user config file `name`).
  static protocol::StatusOr<SshConfig> parse(const std::string& text, const SshConfigOptions& options = {},
                                             const std::string& name = "<text>");

  // `destination` is an alias or host, optionally "user@" before and ":port"
  // after it (an explicit user or port wins over the config).
  protocol::StatusOr<HostSpec> resolve(const std::string& destination) const;

  // Host names of the config that are not patterns (no * ? !), in file order,
  // each once: the entries of a host picker.
  std::vector<std::string> listAliases() const;

  struct Line {
    std::string keyword;  // lower case
    std::vector<std::string> args;
    std::string where;  // "file:line"
  };
  struct Block {
    std::vector<std::string> patterns;  // Host patterns; {"*"} for the top of a file
    // The patterns of the Host blocks an Include of this block was written in:
    // each must match too.
    std::vector<std::vector<std::string>> guards;
    bool never = false;  // a Match block (or inside one): never applies
    std::vector<Line> lines;
  };

 private:
  std::vector<Block> blocks_;
  std::vector<std::string> match_lines_;  // "file:line" of each Match block other than "Match all"
  SshConfigOptions options_;
  friend class SshConfigReader;
};

// "~/x" -> home + "/x"; "~user/x" -> that user's home + "/x"; other paths unchanged.
std::string expandTilde(const std::string& path, const std::string& home);

// The local user's name and home directory (passwd entry of the real uid).
std::string localUserName();
std::string localHomeDirectory();

}  // namespace fs::app::remote

// SshConfig::resolve and listAliases: which blocks apply to a host, first value
// wins, tokens and defaults.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "app/remote/ssh_config.h"
#include "app/remote/ssh_patterns.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

namespace {

using patterns::globMatch;
using patterns::lower;

// A Host line matches when a positive pattern matches and no negated one does.
bool patternsMatch(const std::vector<std::string>& patterns, const std::string& host) {
  bool found = false;
  for (const std::string& p : patterns) {
    if (!p.empty() && p[0] == '!') {
      if (globMatch(host.c_str(), p.c_str() + 1)) return false;
    } else if (globMatch(host.c_str(), p.c_str())) {
      found = true;
    }
  }
  return found;
}

std::optional<bool> parseYesNo(const std::string& v) {
  const std::string l = lower(v);
  if (l == "yes" || l == "true") return true;
  if (l == "no" || l == "false") return false;
  return std::nullopt;
}

StatusOr<int> parseInt(const SshConfig::Line& line, int lo, int hi) {
  if (line.args.empty())
    return Status::invalidArgument(line.where + ": " + line.keyword + " without a value");
  const std::string& v = line.args[0];
  if (line.keyword == "connecttimeout" && lower(v) == "none") return 0;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi) {
    return Status::invalidArgument(line.where + ": " + line.keyword + " '" + v + "' is not a number from " +
                                   std::to_string(lo) + " to " + std::to_string(hi));
  }
  return static_cast<int>(n);
}

struct Destination {
  std::string user, host;
  int port = 0;
};

StatusOr<Destination> parseDestination(const std::string& text) {
  Destination d;
  std::string rest = text;
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    d.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos)
      return Status::invalidArgument("destination '" + text + "': unclosed '['");
    d.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    const auto colon = rest.find(':');
    d.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    d.host = rest;
  }
  if (!port.empty()) {
    char* end = nullptr;
    const long n = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 65535) {
      return Status::invalidArgument("destination '" + text + "': port '" + port + "' is not 1..65535");
    }
    d.port = static_cast<int>(n);
  }
  if (d.host.empty()) return Status::invalidArgument("destination '" + text + "' names no host");
  return d;
}

std::string localHostName() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// %-tokens of IdentityFile, UserKnownHostsFile, IdentityAgent, then ~.
std::string expandTokens(const std::string& in, const HostSpec& spec, const SshConfigOptions& o) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%' || i + 1 >= in.size()) {
      out += in[i];
      continue;
    }
    switch (in[++i]) {
      case '%':
        out += '%';
        break;
      case 'd':
        out += o.home;
        break;
      case 'u':
        out += o.local_user;
        break;
      case 'h':
        out += spec.hostname;
        break;
      case 'r':
        out += spec.user;
        break;
      case 'l':
        out += localHostName();
        break;
      case 'p':
        out += std::to_string(spec.port);
        break;
      case 'n':
        out += spec.alias;
        break;
      case 'i':
        out += std::to_string(getuid());
        break;
      default:
        out += '%';
        out += in[i];
        break;
    }
  }
  return expandTilde(out, o.home);
}

std::vector<std::string> splitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1) {
    parts.push_back(s.substr(start, comma - start));
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace

StatusOr<HostSpec> SshConfig::resolve(const std::string& destination) const {
  auto dest = parseDestination(destination);
  if (!dest.isOk()) return dest.status();
  // Host patterns match the name as written (case-sensitive, as ssh 9.2 does).
  const std::string& host = dest->host;
  // First value wins: each optional is set by the first applying line.
  std::optional<std::string> hostname, user, agent, proxy_jump, proxy_command;
  std::optional<int> port, alive, alive_max, timeout;
  std::optional<bool> identities_only;
  std::optional<std::vector<std::string>> user_known, global_known;
  std::optional<StrictHostKeyChecking> strict;
  std::vector<std::string> identity_files;
  for (const Block& block : blocks_) {
    if (block.never || !patternsMatch(block.patterns, host)) continue;
    if (!std::all_of(block.guards.begin(), block.guards.end(),
                     [&](const std::vector<std::string>& g) { return patternsMatch(g, host); })) {
      continue;
    }
    for (const Line& line : block.lines) {
      const std::string& k = line.keyword;
      const std::string first = line.args.empty() ? std::string() : line.args[0];
      if (line.args.empty()) return Status::invalidArgument(line.where + ": " + k + " without a value");
      auto setInt = [&](std::optional<int>& slot, int lo, int hi) -> Status {
        if (slot) return Status::ok();
        auto n = parseInt(line, lo, hi);
        if (!n.isOk()) return n.status();
        slot = *n;
        return Status::ok();
      };
      Status s = Status::ok();
      if (k == "hostname") {
        if (!hostname) hostname = first;
      } else if (k == "user") {
        if (!user) user = first;
      } else if (k == "port") {
        s = setInt(port, 1, 65535);
      } else if (k == "identityfile") {
        identity_files.push_back(first);
      } else if (k == "identitiesonly") {
        if (!identities_only) identities_only = parseYesNo(first).value_or(false);
      } else if (k == "identityagent") {
        if (!agent) agent = first;
      } else if (k == "proxyjump") {
        if (!proxy_jump && !proxy_command) proxy_jump = first;
      } else if (k == "proxycommand") {
        if (!proxy_jump && !proxy_command) proxy_command = first;
      } else if (k == "userknownhostsfile") {
        if (!user_known) user_known = line.args;
      } else if (k == "globalknownhostsfile") {
        if (!global_known) global_known = line.args;
      } else if (k == "stricthostkeychecking") {
        if (!strict) {
          const std::string v = lower(first);
          if (v == "yes" || v == "true") {
            strict = StrictHostKeyChecking::kYes;
          } else if (v == "no" || v == "false" || v == "off") {
            strict = StrictHostKeyChecking::kNo;
          } else if (v == "accept-new") {
            strict = StrictHostKeyChecking::kAcceptNew;
          } else if (v == "ask") {
            strict = StrictHostKeyChecking::kAsk;
          } else {
            s = Status::invalidArgument(line.where + ": StrictHostKeyChecking '" + first +
                                        "' is not yes/no/ask/accept-new");
          }
        }
      } else if (k == "serveraliveinterval") {
        s = setInt(alive, 0, 1 << 30);
      } else if (k == "serveralivecountmax") {
        s = setInt(alive_max, 0, 1 << 30);
      } else if (k == "connecttimeout") {
        s = setInt(timeout, 0, 1 << 30);
      }
      if (!s.isOk()) return s;
    }
  }
  if (proxy_command && lower(*proxy_command) != "none") {
    return Status::unsupported(dest->host + ": ProxyCommand is not supported (use ProxyJump)");
  }

  HostSpec spec;
  spec.alias = dest->host;
  spec.hostname = lower(dest->host);
  if (hostname) {
    spec.hostname.clear();
    for (std::size_t i = 0; i < hostname->size(); ++i) {
      if ((*hostname)[i] == '%' && i + 1 < hostname->size() && (*hostname)[i + 1] == 'h') {
        spec.hostname += dest->host;
        ++i;
      } else if ((*hostname)[i] == '%' && i + 1 < hostname->size() && (*hostname)[i + 1] == '%') {
        spec.hostname += '%';
        ++i;
      } else {
        spec.hostname += (*hostname)[i];
      }
    }
  }
  spec.user = !dest->user.empty() ? dest->user : user.value_or(options_.local_user);
  spec.port = dest->port != 0 ? dest->port : port.value_or(22);
  if (identity_files.empty()) identity_files = {"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"};
  std::set<std::string> seen;
  for (const std::string& f : identity_files) {
    std::string path = expandTokens(f, spec, options_);
    if (seen.insert(path).second) spec.identity_files.push_back(std::move(path));
  }
  spec.identities_only = identities_only.value_or(false);
  if (agent) spec.identity_agent = lower(*agent) == "none" ? "none" : expandTokens(*agent, spec, options_);
  if (proxy_jump && lower(*proxy_jump) != "none") spec.proxy_jump = splitCommas(*proxy_jump);
  for (const std::string& f :
       user_known.value_or(std::vector<std::string>{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"})) {
    spec.user_known_hosts_files.push_back(expandTokens(f, spec, options_));
  }
  for (const std::string& f : global_known.value_or(
           std::vector<std::string>{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"})) {
    spec.global_known_hosts_files.push_back(expandTokens(f, spec, options_));
  }
  spec.strict_host_key_checking = strict.value_or(StrictHostKeyChecking::kAsk);
  spec.server_alive_interval = alive.value_or(0);
  spec.server_alive_count_max = alive_max.value_or(3);
  spec.connect_timeout = timeout.value_or(0);
  return spec;
}

std::vector<std::string> SshConfig::listAliases() const {
  std::vector<std::string> aliases;
  std::set<std::string> seen;
  for (const Block& block : blocks_) {
    if (block.never) continue;
    for (const std::string& p : block.patterns) {
      if (p.find_first_of("*?!") != std::string::npos) continue;
      if (seen.insert(p).second) aliases.push_back(p);
    }
  }
  return aliases;
}

}  // namespace fs::app::remote

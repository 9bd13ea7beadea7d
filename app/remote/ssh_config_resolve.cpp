// SshConfig::resolve and listAliases: which blocks apply to a host, first value
// wins, tokens and defaults.
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>

#include "app/remote/known_hosts.h"
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

std::string sha1Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// A value of UserKnownHostsFile, IdentityFile or IdentityAgent, with where it
// was written ("file:line"; "<default>" for ours).
struct PathValue {
  std::string value, where;
};

// NOTE [Paths in ssh_config]: ~, then ${VAR} and %-tokens in one pass; the
// result must be absolute.
StatusOr<std::string> expandPath(const std::string& keyword, const PathValue& in, const HostSpec& spec,
                                 const SshConfigOptions& o) {
  const std::string what = in.where + ": " + keyword + " '" + in.value + "'";
  const std::string tilde = expandTilde(in.value, o.home);
  std::string out;
  for (std::size_t i = 0; i < tilde.size(); ++i) {
    const char c = tilde[i];
    if (c == '$' && i + 1 < tilde.size() && tilde[i + 1] == '{') {
      const std::size_t close = tilde.find('}', i + 2);
      if (close == std::string::npos) return Status::invalidArgument(what + ": '${' without '}'");
      const std::string name = tilde.substr(i + 2, close - i - 2);
      const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
      if (value == nullptr)
        return Status::invalidArgument(what + ": the environment variable " + name + " is not set");
      out += value;
      i = close;
      continue;
    }
    if (c != '%') {
      out += c;
      continue;
    }
    if (i + 1 >= tilde.size()) return Status::invalidArgument(what + ": '%' at the end");
    const char t = tilde[++i];
    if (t == '%') {
      out += '%';
    } else if (t == 'd') {
      out += o.home;
    } else if (t == 'u') {
      out += o.local_user;
    } else if (t == 'h') {
      out += spec.hostname;
    } else if (t == 'r') {
      out += spec.user;
    } else if (t == 'l') {
      out += localHostName();
    } else if (t == 'L') {
      const std::string host = localHostName();
      out += host.substr(0, host.find('.'));
    } else if (t == 'p') {
      out += std::to_string(spec.port);
    } else if (t == 'n' || t == 'k') {  // %k: the HostKeyAlias, which we ignore (a warning)
      out += spec.alias;
    } else if (t == 'i') {
      out += std::to_string(getuid());
    } else if (t == 'C') {
      out += sha1Hex(localHostName() + spec.hostname + std::to_string(spec.port) + spec.user);
    } else {
      return Status::invalidArgument(what + ": unknown token %" + std::string(1, t));
    }
  }
  if (out.empty() || out[0] != '/') {
    return Status::invalidArgument(what + " is a relative path" +
                                   (out != in.value ? " ('" + out + "' after expansion)" : std::string()) +
                                   ": ssh would read it from the working directory; give an absolute path "
                                   "or one starting with ~");
  }
  return out;
}

// UserKnownHostsFile / GlobalKnownHostsFile: "none" alone is no file.
StatusOr<std::vector<std::string>> knownHostsFiles(const std::string& keyword, const SshConfig::Line* line,
                                                   std::vector<std::string> defaults, bool expand,
                                                   const HostSpec& spec, const SshConfigOptions& o) {
  std::vector<PathValue> values;
  if (line == nullptr) {
    for (std::string& d : defaults) values.push_back({std::move(d), "<default>"});
  } else {
    for (const std::string& a : line->args) {
      if (lower(a) != "none") {
        values.push_back({a, line->where});
      } else if (line->args.size() != 1) {
        return Status::invalidArgument(line->where + ": " + keyword + " none must be the only value");
      }
    }
  }
  std::vector<std::string> files;
  for (const PathValue& v : values) {
    if (!expand) {
      if (v.value.empty() || v.value[0] != '/') {
        return Status::invalidArgument(v.where + ": " + keyword + " '" + v.value +
                                       "' is a relative path: ssh would read it from the working directory "
                                       "(and expands neither ~ nor variables here); give an absolute path");
      }
      files.push_back(v.value);
      continue;
    }
    auto path = expandPath(keyword, v, spec, o);
    if (!path.isOk()) return path.status();
    files.push_back(std::move(*path));
  }
  return files;
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
  std::optional<std::string> hostname, user, proxy_jump, proxy_command;
  std::optional<int> port, alive, alive_max, timeout;
  std::optional<bool> identities_only;
  const Line *user_known = nullptr, *global_known = nullptr, *agent = nullptr;
  const Line *host_key_alias = nullptr, *hash_known_hosts = nullptr;
  std::optional<StrictHostKeyChecking> strict;
  std::vector<PathValue> identity_files;
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
        identity_files.push_back({first, line.where});
      } else if (k == "identitiesonly") {
        if (!identities_only) identities_only = parseYesNo(first).value_or(false);
      } else if (k == "identityagent") {
        if (agent == nullptr) agent = &line;
      } else if (k == "proxyjump") {
        if (!proxy_jump && !proxy_command) proxy_jump = first;
      } else if (k == "proxycommand") {
        if (!proxy_jump && !proxy_command) proxy_command = first;
      } else if (k == "userknownhostsfile") {
        if (user_known == nullptr) user_known = &line;
      } else if (k == "globalknownhostsfile") {
        if (global_known == nullptr) global_known = &line;
      } else if (k == "hostkeyalias") {
        if (host_key_alias == nullptr) host_key_alias = &line;
      } else if (k == "hashknownhosts") {
        if (hash_known_hosts == nullptr) hash_known_hosts = &line;
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
  if (identity_files.empty()) {
    for (const char* f : {"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"})
      identity_files.push_back({f, "<default>"});
  }
  std::set<std::string> seen;
  for (const PathValue& f : identity_files) {
    auto path = expandPath("IdentityFile", f, spec, options_);
    if (!path.isOk()) return path.status();
    if (seen.insert(*path).second) spec.identity_files.push_back(std::move(*path));
  }
  spec.identities_only = identities_only.value_or(false);
  if (agent != nullptr) {
    const std::string& value = agent->args[0];
    if (lower(value) == "none" || value == "SSH_AUTH_SOCK") {
      spec.identity_agent = lower(value) == "none" ? "none" : value;
    } else if (value.size() > 1 && value[0] == '$' && value[1] != '{') {
      const char* socket = std::getenv(value.c_str() + 1);
      if (socket == nullptr) {
        return Status::invalidArgument(agent->where + ": IdentityAgent '" + value +
                                       "': the environment variable " + value.substr(1) + " is not set");
      }
      auto path = expandPath("IdentityAgent", {socket, agent->where}, spec, options_);
      if (!path.isOk()) return path.status();
      spec.identity_agent = *path;
    } else {
      auto path = expandPath("IdentityAgent", {value, agent->where}, spec, options_);
      if (!path.isOk()) return path.status();
      spec.identity_agent = *path;
    }
  }
  if (proxy_jump && lower(*proxy_jump) != "none") spec.proxy_jump = splitCommas(*proxy_jump);
  auto user_files = knownHostsFiles("UserKnownHostsFile", user_known,
                                    {"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}, true, spec, options_);
  if (!user_files.isOk()) return user_files.status();
  spec.user_known_hosts_files = std::move(*user_files);
  auto global_files =
      knownHostsFiles("GlobalKnownHostsFile", global_known,
                      {"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}, false, spec, options_);
  if (!global_files.isOk()) return global_files.status();
  spec.global_known_hosts_files = std::move(*global_files);
  for (const std::string& where : match_lines_) {
    spec.warnings.push_back(where +
                            ": Match blocks are not supported: the lines up to the next Host or Match are "
                            "ignored");
  }
  if (host_key_alias != nullptr) {
    const std::string looked_up = knownHostsName(spec.hostname, spec.port);
    spec.warnings.push_back(host_key_alias->where + ": HostKeyAlias is not supported and is ignored: " +
                            "host keys are looked up as " + looked_up + ", not as " +
                            host_key_alias->args[0]);
  }
  if (hash_known_hosts != nullptr && parseYesNo(hash_known_hosts->args[0]).value_or(false)) {
    spec.warnings.push_back(hash_known_hosts->where +
                            ": HashKnownHosts is not supported: a host key saved from here is written with "
                            "its host name in plain text");
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

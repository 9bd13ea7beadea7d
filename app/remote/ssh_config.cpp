// Reading ssh_config files into blocks (SshConfigReader); resolution is in
// ssh_config_resolve.cpp.
#include "app/remote/ssh_config.h"

#include <glob.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

std::string expandTilde(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (path.rfind("~/", 0) == 0) return home + path.substr(1);
  if (path.rfind("~", 0) == 0) {
    const std::size_t slash = path.find('/');
    const std::string user = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    if (const passwd* pw = getpwnam(user.c_str())) {
      return pw->pw_dir + (slash == std::string::npos ? std::string() : path.substr(slash));
    }
  }
  return path;
}

std::string localUserName() {
  if (const passwd* pw = getpwuid(getuid())) return pw->pw_name;
  return "unknown";
}

std::string localHomeDirectory() {
  if (const passwd* pw = getpwuid(getuid())) return pw->pw_dir;
  const char* home = std::getenv("HOME");
  return home != nullptr ? home : "/";
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Splits the arguments after the keyword: whitespace separated, "..." and
// '...' group, backslash escapes a quote, backslash or space, an unquoted #
// at the start of a word ends the line.
StatusOr<std::vector<std::string>> splitArgs(const std::string& s, const std::string& where) {
  std::vector<std::string> args;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] == '#') break;
    std::string word;
    char quote = 0;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (quote == 0 && std::isspace(static_cast<unsigned char>(c))) break;
      if (c == '\\' && i + 1 < s.size() &&
          (s[i + 1] == '"' || s[i + 1] == '\'' || s[i + 1] == '\\' || s[i + 1] == ' ')) {
        word += s[++i];
      } else if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
      } else if (quote != 0 && c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    }
    if (quote != 0) return Status::invalidArgument(where + ": unterminated quote");
    args.push_back(std::move(word));
  }
  return args;
}

}  // namespace

// Reads files into SshConfig::blocks_, flattening Includes: the blocks of an
// included file carry the patterns of the block the Include was in as guards.
class SshConfigReader {
 public:
  SshConfigReader(SshConfig& config, std::string home) : config_(config), home_(std::move(home)) {}

  Status readFile(const std::string& path, const std::string& include_base, const SshConfig::Block& outer,
                  int depth) {
    std::ifstream in(path);
    if (!in) return Status::ok();  // a missing file is an empty one, as for ssh
    std::stringstream text;
    text << in.rdbuf();
    return readText(text.str(), path, include_base, outer, depth);
  }

  // `outer`: guards and never of the Include this text comes from (none at the top).
  Status readText(const std::string& text, const std::string& name, const std::string& include_base,
                  const SshConfig::Block& outer, int depth) {
    if (depth > 16) return Status::invalidArgument(name + ": Include nested too deeply");
    SshConfig::Block current = outer;
    current.patterns = {"*"};
    current.lines.clear();
    config_.blocks_.push_back(current);
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      const std::string where = name + ":" + std::to_string(number);
      std::size_t i = 0;
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      if (i >= line.size() || line[i] == '#') continue;
      std::size_t k = i;
      while (k < line.size() && !std::isspace(static_cast<unsigned char>(line[k])) && line[k] != '=') ++k;
      const std::string keyword = lower(line.substr(i, k - i));
      while (k < line.size() && std::isspace(static_cast<unsigned char>(line[k]))) ++k;
      if (k < line.size() && line[k] == '=') ++k;
      auto args = splitArgs(line.substr(k), where);
      if (!args.isOk()) return args.status();
      if (keyword == "host") {
        if (args->empty()) return Status::invalidArgument(where + ": Host without a pattern");
        current = outer;
        current.lines.clear();
        current.patterns.clear();
        for (const std::string& p : *args) current.patterns.push_back(p);
      } else if (keyword == "match") {
        const bool all = args->size() == 1 && lower((*args)[0]) == "all";
        current = outer;
        current.lines.clear();
        current.patterns = {"*"};
        current.never = outer.never || !all;
        if (!all) config_.match_lines_.push_back(where);
      } else if (keyword == "include") {
        SshConfig::Block inner = current;
        inner.guards.push_back(current.patterns);
        for (const std::string& pattern : *args) {
          Status s = include(pattern, include_base, inner, depth, where);
          if (!s.isOk()) return s;
        }
      } else {
        config_.blocks_.back().lines.push_back({keyword, std::move(*args), where});
        continue;
      }
      // A new block (or the rest of the enclosing one after an Include).
      config_.blocks_.push_back(current);
    }
    return Status::ok();
  }

 private:
  Status include(const std::string& pattern, const std::string& base, const SshConfig::Block& outer,
                 int depth, const std::string& where) {
    std::string path = expandTilde(pattern, home_);
    if (path.empty() || path[0] != '/') path = base + "/" + path;
    glob_t g{};
    const int rc = glob(path.c_str(), 0, nullptr, &g);
    Status status = Status::ok();
    if (rc == 0) {
      for (std::size_t i = 0; i < g.gl_pathc && status.isOk(); ++i) {
        status = readFile(g.gl_pathv[i], base, outer, depth + 1);
      }
    } else if (rc != GLOB_NOMATCH) {
      status = Status::ioError(where + ": Include " + pattern + ": cannot list " + path);
    }
    globfree(&g);
    return status;
  }

  SshConfig& config_;
  std::string home_;
};

namespace {

SshConfigOptions withDefaults(SshConfigOptions options) {
  if (options.home.empty()) options.home = localHomeDirectory();
  if (options.local_user.empty()) options.local_user = localUserName();
  return options;
}

}  // namespace

StatusOr<SshConfig> SshConfig::load(const SshConfigOptions& given) {
  SshConfig config;
  config.options_ = withDefaults(given);
  const SshConfigOptions& o = config.options_;
  SshConfigReader reader(config, o.home);
  if (!o.user_config.empty()) {
    Status s = reader.readFile(expandTilde(o.user_config, o.home), o.home + "/.ssh", {}, 0);
    if (!s.isOk()) return s;
  }
  if (!o.system_config.empty()) {
    Status s = reader.readFile(o.system_config, "/etc/ssh", {}, 0);
    if (!s.isOk()) return s;
  }
  return config;
}

StatusOr<SshConfig> SshConfig::parse(const std::string& text, const SshConfigOptions& given,
                                     const std::string& name) {
  SshConfig config;
  config.options_ = withDefaults(given);
  SshConfigReader reader(config, config.options_.home);
  Status s = reader.readText(text, name, config.options_.home + "/.ssh", {}, 0);
  if (!s.isOk()) return s;
  return config;
}

}  // namespace fs::app::remote

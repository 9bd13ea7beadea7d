// Fuzz target: an ssh_config file (app::remote::SshConfig::parse), then the
// resolution of a few destinations through it and the host picker's list.
// The parser is app code (fs_app_remote, which is Qt-free); this target
// compiles its files directly so it builds in the fuzz tree without the GUI.
//
// Include reads files: the home directory is a scratch directory whose
// ~/.ssh holds the input itself (as "config", so "Include config" recurses)
// and one small fixed file ("common"). An input with an Include line that
// names '/', '~' or ".." is skipped, so the target never reads the machine's
// own files (an Include of /dev/zero would never end; so it would in ssh).
// Checked: errors name the file and line; every resolved destination has a
// host name and a port in 1..65535; the warnings name file:line.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "app/remote/ssh_config.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace remote = fs::app::remote;

bool hasOutsideInclude(std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    start = end + 1;
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto first = line.find_first_not_of(" \t\r\v\f");
    if (first == std::string::npos || line.compare(first, 7, "include") != 0) continue;
    if (line.find_first_of("/~") != std::string::npos || line.find("..") != std::string::npos) return true;
  }
  return false;
}

const std::string& home() {
  static const std::string dir = [] {
    const auto ssh = fs::fuzz::scratchDir() / "home" / ".ssh";
    std::filesystem::create_directories(ssh);
    fs::fuzz::writeScratch("home/.ssh/common", "Host *.example.com\n  User shared\n  Port 2200\n");
    return (fs::fuzz::scratchDir() / "home").string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fs::fuzz::text(data, size));
  if (hasOutsideInclude(text)) return 0;
  remote::SshConfigOptions options;
  options.home = home();
  fs::fuzz::writeScratch("home/.ssh/config", text);
  options.user_config.clear();
  options.system_config.clear();
  options.local_user = "fuzz";
  auto config = remote::SshConfig::parse(text, options, "fuzz_config");
  if (!config) {
    // "fuzz_config:N: ..." or, from an Include, the included file's path.
    const std::string& m = config.status().message();
    fs::fuzz::check(m.find("fuzz_config") != std::string::npos || m.find(home()) != std::string::npos,
                    "an ssh_config error that names no file: " + m);
    return 0;
  }
  for (const std::string& alias : config->listAliases()) {
    fs::fuzz::check(alias.find_first_of("*?!") == std::string::npos,
                    "a pattern listed as an alias: " + alias);
  }
  for (const char* destination : {"fuzzhost", "user@db.example.com:2222", "10.0.0.1", "Gpu-Node01"}) {
    auto spec = config->resolve(destination);
    if (!spec) {
      fs::fuzz::check(!spec.status().message().empty(), "a resolve error without a message");
      continue;
    }
    fs::fuzz::check(!spec->hostname.empty(), std::string("an empty HostName for ") + destination);
    fs::fuzz::check(spec->port >= 1 && spec->port <= 65535,
                    "port " + std::to_string(spec->port) + " for " + destination);
    for (const std::string& w : spec->warnings) {
      fs::fuzz::check(w.find(':') != std::string::npos, "a warning that names no file:line: " + w);
    }
  }
  return 0;
}

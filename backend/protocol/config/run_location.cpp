#include "backend/protocol/config/run_location.h"

namespace fs::protocol {

namespace {

// The value as it can be printed on one line: control characters as \xNN.
std::string printable(std::string_view text) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

std::string runPathTextProblem(std::string_view text) {
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return "holds a control character (a line break, a tab, ...)";
  }
  if (text.find("::") != std::string_view::npos)
    return "holds '::', which separates the parts of a shard list";
  if (text.find("pipe:") != std::string_view::npos) return "holds 'pipe:', which marks a shell command";
  return {};
}

StatusOr<std::string> hostRunRoot(std::string_view root) {
  if (!root.starts_with('~')) return std::string(root);
  if (root == "~") return std::string(".");
  if (root.starts_with("~/")) {
    std::string_view rest = root.substr(2);
    while (rest.starts_with('/')) rest.remove_prefix(1);
    return rest.empty() ? std::string(".") : std::string(rest);
  }
  return Status::invalidArgument("run root '" + printable(root) +
                                 "': '~user' paths are not supported; write the absolute path, or ~/... for "
                                 "a directory under the login directory");
}

std::vector<Problem> checkRunLocation(const RunConfig& config) {
  std::vector<Problem> problems;
  const std::pair<const char*, const std::string*> fields[] = {
      {"name", &config.name},
      {"run_root", &config.run_root},
      {"launch.remote_workdir", &config.launch.remote_workdir},
  };
  for (const auto& [path, value] : fields) {
    const std::string why = runPathTextProblem(*value);
    if (why.empty()) continue;
    problems.push_back({Problem::Severity::kError, path,
                        "'" + printable(*value) + "' " + why + "; a run directory is made from it",
                        "use letters, digits, '/', '.', '_' and '-' (NOTE [Run directory text])"});
  }
  if (auto root = hostRunRoot(config.launch.remote_workdir); !root) {
    problems.push_back(
        {Problem::Severity::kError, "launch.remote_workdir", root.status().message(),
         "an absolute path, a path under the login directory, or ~/... (NOTE [A run root under ~])"});
  }
  return problems;
}

}  // namespace fs::protocol

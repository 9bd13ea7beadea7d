#include "studio/remote/cli_args.h"

#include <algorithm>
#include <cctype>

namespace fs::studio::remote {

using protocol::Status;

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedArgs::all(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = values.find(name);
  return it == values.end() ? kNone : it->second;
}

protocol::StatusOr<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                                         const std::vector<OptionSpec>& specs) {
  ParsedArgs out;
  bool optionsDone = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (optionsDone || !a.starts_with("--")) {
      out.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      optionsDone = true;
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> inlineValue;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name.resize(eq);
    }
    const auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) return Status::invalidArgument("unknown option --" + name);
    if (!spec->repeated && out.has(name)) return Status::invalidArgument("--" + name + " given twice");
    if (!spec->takesValue) {
      if (inlineValue) return Status::invalidArgument("--" + name + " takes no value");
      out.values[name].push_back("");
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size())
        return Status::invalidArgument("--" + name + " needs a value (" + spec->valueName + ")");
      inlineValue = args[++i];
    }
    out.values[name].push_back(*inlineValue);
  }
  return out;
}

std::string describeOptions(const std::vector<OptionSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    std::string left = "  --" + s.name + (s.takesValue ? " " + s.valueName : "");
    if (left.size() < 26) left.resize(26, ' ');
    out += left + " " + s.help + "\n";
  }
  return out;
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

protocol::StatusOr<std::vector<std::string>> slurmEnvPrefix(const std::vector<std::string>& entries) {
  std::vector<std::string> prefix;
  for (const auto& kv : entries) {
    const auto eq = kv.find('=');
    const std::string name = kv.substr(0, eq);
    bool valid =
        eq != std::string::npos && !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (const char ch : name) valid = valid && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!valid) {
      return protocol::Status::invalidArgument(
          "--slurm-env '" + kv + "': not NAME=VALUE with NAME a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    if (prefix.empty()) prefix.push_back("env");
    prefix.push_back(kv);
  }
  return prefix;
}

}  // namespace fs::studio::remote

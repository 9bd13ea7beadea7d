#include "backend/cli/args.h"

#include <algorithm>

#include "backend/protocol/config/text_match.h"

namespace fs::cli {

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedArgs::all(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(name);
  return it == values.end() ? kEmpty : it->second;
}

protocol::StatusOr<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                                         const std::vector<OptionSpec>& specs) {
  ParsedArgs out;
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back("--" + s.name);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.positionals.insert(out.positionals.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      out.positionals.push_back(a);
      continue;
    }
    const bool isLong = a.rfind("--", 0) == 0;
    std::string name = a.substr(isLong ? 2 : 1);
    std::string value;
    bool inlineValue = false;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inlineValue = true;
    }
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) {
      return isLong ? s.name == name : (!s.shortName.empty() && s.shortName == name);
    });
    if (spec == specs.end()) {
      return protocol::Status::invalidArgument("unknown option '" + a + "'" +
                                               protocol::didYouMean("--" + name, names));
    }
    if (spec->takesValue) {
      if (!inlineValue) {
        if (i + 1 >= args.size()) {
          return protocol::Status::invalidArgument("option --" + name + " needs a value (" + spec->valueName +
                                                   ")");
        }
        value = args[++i];
      }
    } else {
      if (inlineValue) return protocol::Status::invalidArgument("option --" + name + " takes no value");
      value = "true";
    }
    name = spec->name;
    auto& slot = out.values[name];
    if (!slot.empty() && !spec->repeatable) {
      return protocol::Status::invalidArgument("option --" + name + " given twice");
    }
    slot.push_back(value);
  }
  return out;
}

std::string formatOptions(const std::vector<OptionSpec>& specs) {
  std::string s;
  for (const auto& o : specs) {
    std::string left = "  " + (o.shortName.empty() ? "" : "-" + o.shortName + ", ") + "--" + o.name +
                       (o.takesValue ? " " + o.valueName : "");
    if (left.size() < 28)
      left.resize(28, ' ');
    else
      left += "  ";
    s += left + o.help + (o.repeatable ? " (repeatable)" : "") + "\n";
  }
  return s;
}

protocol::StatusOr<long> countOption(const ParsedArgs& args, const std::string& name, long fallback) {
  if (!args.has(name)) return fallback;
  const std::string text = args.get(name);
  try {
    std::size_t used = 0;
    const long n = std::stol(text, &used);
    if (used == text.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  return protocol::Status::invalidArgument("--" + name + " '" + text + "' is not a count (0 or more)");
}

}  // namespace fs::cli

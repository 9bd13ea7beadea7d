// A small argv parser shared by the flamingo-train subcommands: long options
// with values (--name value or --name=value), repeatable options, boolean
// switches, positionals, and "--" after which everything is positional.
// Unknown options are errors naming the option and the closest known one.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::cli {

struct OptionSpec {
  std::string name;  // without leading dashes
  bool takesValue = false;
  bool repeatable = false;
  std::string valueName;  // for help, e.g. FILE
  std::string help;
  std::string shortName;  // optional one-letter alias, e.g. "o" for -o
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> values;  // option -> values (switches get "true")
  std::vector<std::string> positionals;
  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
};

protocol::StatusOr<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                                         const std::vector<OptionSpec>& specs);

// The value of a count option (`--depth 3`): `fallback` when absent; an error
// "--NAME 'VALUE' is not a count (0 or more)" when not a whole number >= 0.
protocol::StatusOr<long> countOption(const ParsedArgs& args, const std::string& name, long fallback);

// "  --set KEY=VALUE   Override a config field (repeatable)" lines.
std::string formatOptions(const std::vector<OptionSpec>& specs);

}  // namespace fs::cli

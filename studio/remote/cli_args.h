// The option parser of `flamingo-studio remote`: --name VALUE, --name=VALUE, flags,
// repeated options, positionals; errors name the option.
//
// Thread-safety: plain values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::studio::remote {

struct OptionSpec {
  std::string name;  // without "--"
  bool takesValue = false;
  bool repeated = false;
  std::string valueName;  // for the help text
  std::string help;
};

struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> values;  // flags hold one "" each
  std::vector<std::string> positionals;
  bool has(const std::string& name) const { return values.count(name) != 0; }
  // The last value given, or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = {}) const;
  const std::vector<std::string>& all(const std::string& name) const;
};

// Parses args (after the command word). "--" ends options.
protocol::StatusOr<ParsedArgs> parseArgs(const std::vector<std::string>& args,
                                         const std::vector<OptionSpec>& specs);
// The options part of a help text, one per line.
std::string describeOptions(const std::vector<OptionSpec>& specs);
// "a,b,c" -> {"a","b","c"}; empty items are dropped.
std::vector<std::string> splitList(const std::string& text);
// The --slurm-env entries as the argument vector that runs the SLURM commands
// under them: {} for none, else {"env", "NAME=VALUE", ...}. Each entry must be
// NAME=VALUE with NAME a shell variable name ([A-Za-z_][A-Za-z0-9_]*): `env`
// would run an entry without '=' as the command. The error names the entry.
protocol::StatusOr<std::vector<std::string>> slurmEnvPrefix(const std::vector<std::string>& entries);

}  // namespace fs::studio::remote

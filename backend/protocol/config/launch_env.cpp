// launch.env checks and forms (NOTE [Launch environment] in launch_env.h).
#include "backend/protocol/config/launch_env.h"

#include <algorithm>
#include <cstdio>

namespace fs::protocol {
namespace {

// The first control character of `value` as a phrase ("a newline", "byte 0x01"), or "".
std::string firstControlCharacter(std::string_view value) {
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) continue;
    if (u == 0) return "a NUL byte";
    if (c == '\n') return "a newline";
    if (c == '\r') return "a carriage return";
    if (c == '\t') return "a tab";
    char hex[24];
    std::snprintf(hex, sizeof hex, "control byte 0x%02X", u);
    return hex;
  }
  return "";
}

// `name` with every character a variable name cannot hold replaced by '_'.
std::string suggestedEnvName(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(0, "_");
  return out;
}

}  // namespace

bool isEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

bool isLauncherVariable(std::string_view name) {
  return name.starts_with("SLURM_") ||
         std::find(kLauncherVariables.begin(), kLauncherVariables.end(), name) != kLauncherVariables.end();
}

std::vector<Problem> validateLaunchEnv(const LaunchConfig& launch) {
  std::vector<Problem> problems;
  auto error = [&](const std::string& name, std::string message, std::string fix) {
    problems.push_back({Problem::Severity::kError, "launch.env." + name, std::move(message), std::move(fix)});
  };
  for (const auto& [name, value] : launch.env) {
    if (!isEnvName(name)) {
      error(name,
            "'" + name + "' is not a variable name: letters, digits and _ only, not starting with a digit",
            "rename it, e.g. " + suggestedEnvName(name));
      continue;
    }
    if (isLauncherVariable(name)) {
      const bool slurmOwn =
          std::find(kLauncherVariables.begin(), kLauncherVariables.end(), name) == kLauncherVariables.end();
      error(name,
            slurmOwn ? name +
                           " is SLURM's: srun sets SLURM_* variables for each task and reads them as its "
                           "options, so launch.env cannot set it"
                     : name +
                           " is set by the launcher for each rank (node agent, torchrun, srun) and rank "
                           "discovery reads it, so launch.env cannot set it",
            slurmOwn ? "remove it; SLURM options go in launch.slurm.* or launch.slurm.extra_args"
            : name.starts_with("TORCHELASTIC_") || name.starts_with("FLAMINGO_RESTART_")
                ? "remove it; the node agent sets it for each attempt from launch.max_restarts"
                : "remove it; the world comes from launch.nnodes, launch.nproc_per_node, "
                  "launch.master_addr and launch.master_port");
      continue;
    }
    if (const std::string bad = firstControlCharacter(value); !bad.empty()) {
      error(name, "the value holds " + bad + ", which an environment variable or a batch script cannot carry",
            "one line of printable text");
    }
  }
  return problems;
}

std::vector<std::string> launchEnvAssignments(const LaunchConfig& launch) {
  std::vector<std::string> out;
  for (const auto& [name, value] : launch.env) out.push_back(name + "=" + value);
  return out;
}

std::vector<std::string> launchEnvDifferences(const LaunchConfig& launch,
                                              const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const auto& [name, value] : launch.env) {
    const auto it = env.find(name);
    if (it == env.end()) {
      out.push_back("launch.env." + name + " is '" + value + "' but " + name + " is not set in this process");
    } else if (it->second != value) {
      out.push_back("launch.env." + name + " is '" + value + "' but this process has " + name + "='" +
                    it->second + "'");
    }
  }
  return out;
}

}  // namespace fs::protocol

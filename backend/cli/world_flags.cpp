#include "backend/cli/world_flags.h"

#include <charconv>
#include <utility>

namespace fs::cli {

std::vector<OptionSpec> worldFlagOptions() {
  return {
      {"rank", true, false, "N", "This process's rank (default: RANK / PMI_RANK / SLURM_PROCID / ...)"},
      {"world-size", true, false, "N",
       "Ranks in the run (default: WORLD_SIZE / PMI_SIZE / SLURM_NTASKS / ...)"},
      {"local-rank", true, false, "N", "Rank on this node (default: LOCAL_RANK / SLURM_LOCALID / ...)"},
      {"local-world-size", true, false, "N", "Ranks on this node (default: LOCAL_WORLD_SIZE / ...)"},
  };
}

protocol::StatusOr<launch::WorldFlags> worldFlagsFrom(const ParsedArgs& args) {
  launch::WorldFlags flags;
  for (auto [name, slot] :
       {std::pair{"rank", &flags.rank}, std::pair{"world-size", &flags.worldSize},
        std::pair{"local-rank", &flags.localRank}, std::pair{"local-world-size", &flags.localWorldSize},
        std::pair{"master-port", &flags.masterPort}}) {
    if (!args.has(name)) continue;
    const std::string text = args.get(name);
    std::int64_t value = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
      return protocol::Status::invalidArgument("--" + std::string(name) + " '" + text +
                                               "' is not a whole number");
    }
    *slot = value;
  }
  if (args.has("master-addr")) flags.masterAddr = args.get("master-addr");
  return flags;
}

}  // namespace fs::cli

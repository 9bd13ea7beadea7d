// checkpoint: tools for checkpoints. inspect, diff, state and check (cmd_checkpoint_*.cpp,
// torch-free) show what any checkpoint holds, what changed, its training state and whether it
// fits a config's model; consolidate
// (cmd_checkpoint_consolidate.cpp, with the engine) turns a sharded checkpoint into one OpenFlamingo-format
// file.
#include <map>
#include <ostream>

#include "backend/cli/commands.h"

namespace fs::cli {

int runCheckpoint(const std::vector<std::string>& args, Io& io) {
  static const std::map<std::string, int (*)(const std::vector<std::string>&, Io&)> subs = {
      {"inspect", runCheckpointInspect},
      {"diff", runCheckpointDiff},
      {"state", runCheckpointState},
      {"check", runCheckpointCheck},
#ifdef FS_HAVE_ENGINE
      {"consolidate", runCheckpointConsolidate},
#endif
  };
  if (args.empty() || args[0] == "--help" || !subs.count(args[0])) {
    auto& os = args.empty() || args[0] != "--help" ? io.err : io.out;
    if (!args.empty() && args[0] != "--help")
      os << "flamingo-train checkpoint: unknown tool '" << args[0] << "'\n";
    os << "usage: flamingo-train checkpoint <tool> [options]\n\n"
          "  inspect       what a checkpoint holds: format, sections, modules, tensors, hashes\n"
          "  diff          what changed between two checkpoints, tensor by tensor\n"
          "  state         training state in words: step, data position, RNG, scheduler, optimizer\n"
          "  check         whether a checkpoint's weights fit a run config's model (names, shapes)\n"
#ifdef FS_HAVE_ENGINE
          "  consolidate   sharded checkpoint directory -> one full (OpenFlamingo-format) file\n"
#endif
        ;
    return args.size() == 1 && args[0] == "--help" ? kExitOk : kExitUsage;
  }
  return subs.at(args[0])(std::vector<std::string>(args.begin() + 1, args.end()), io);
}

}  // namespace fs::cli

// replay: run the engine on a reference file of initial weights and batches
// written by Python, print each iteration's losses, write the final
// trainable parameters (backend/trainer/replay.h).
#include <cstdio>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/cli/paths.h"
#include "backend/protocol/config/validate.h"
#include "backend/trainer/replay.h"

namespace fs::cli {

const std::vector<OptionSpec> kReplayOptions = {
    {"config", true, false, "FILE", "Run config (YAML) of the model and step to replay", "c"},
    {"reference", true, false, "FILE", "torch.save file: {'init': {name: tensor}, 'batches': [...]}", "r"},
    {"out", true, false, "FILE",
     "Where to write the final trainable parameters (default: <run dir>/replay_params.pt)", "o"},
    {"set", true, true, "KEY=VALUE", "Override a config field"},
    {"run-dir", true, false, "DIR", "Run directory (default: a new one under the user's data directory)"},
    {"help", false, false, "", "Show this help"},
};

int runReplay(const std::vector<std::string>& args, Io& io) {
  const std::string usage =
      "usage: flamingo-train replay --config FILE --reference FILE [--out FILE] [--set KEY=VALUE]... "
      "[--run-dir DIR]\n";
  auto parsed = parseArgs(args, kReplayOptions);
  if (!parsed) {
    io.err << "flamingo-train replay: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out
        << usage
        << "\nProves the engine matches your Python runs. The reference is a torch.save dict: 'init' maps\n"
           "OpenFlamingo parameter names to tensors (the whole model), 'batches' is a list of\n"
           "{'laion': (images, input_ids, attention_mask), 'mmc4': (...)} in OpenFlamingo's shapes.\n"
           "Loads 'init', runs one training iteration per batch pair (dropout off), prints the losses of\n"
           "each iteration and writes the final trainable parameters (torch.load reads them).\n\n"
        << formatOptions(kReplayOptions);
    return kExitOk;
  }
  if (!parsed->has("config") || !parsed->has("reference") || !parsed->positionals.empty()) {
    io.err << "flamingo-train replay: --config FILE and --reference FILE are required\n" << usage;
    return kExitUsage;
  }
  auto config = loadRunConfig(parsed->get("config"), parsed->all("set"), io);
  if (!config) return kExitFailure;
  const auto problems = protocol::validateConfig(*config, protocol::FileChecks::kModelFiles);
  printProblems(parsed->get("config"), problems, io.err);
  if (protocol::hasErrors(problems)) return kExitFailure;
  auto reference = trainer::readReplayReference(parsed->get("reference"));
  if (!reference) {
    io.err << "flamingo-train replay: " << reference.status().message() << "\n";
    return kExitFailure;
  }
  const std::filesystem::path runDir =
      parsed->has("run-dir") ? std::filesystem::path(parsed->get("run-dir")) : timestampedRunDir("replay");
  config->run_root = runDir.parent_path().string();
  trainer::ReplayOptions replay;
  replay.out = parsed->has("out") ? std::filesystem::path(parsed->get("out")) : runDir / "replay_params.pt";
  replay.onIteration = [&io](int64_t iteration, const std::map<std::string, double>& loss) {
    io.out << "iteration " << iteration;
    for (const auto& [name, l] : loss) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "  loss_%s %.9g", name.c_str(), l);
      io.out << buf;
    }
    io.out << "\n" << std::flush;
  };
  io.out << "run directory: " << runDir.string() << "\n"
         << "replaying " << reference->batches.size() << " iterations from " << parsed->get("reference")
         << "\n"
         << std::flush;
  if (auto s = trainer::runReplay(*config, reference.value(), runDir, replay); !s) {
    io.err << "flamingo-train replay: " << s.message() << "\n";
    return kExitFailure;
  }
  io.out << "wrote " << replay.out.string() << "\n";
  return kExitOk;
}

}  // namespace fs::cli

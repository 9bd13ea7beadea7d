#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/protocol/config/derived.h"
#include "backend/protocol/config/validate.h"

namespace fs::cli {
const std::vector<OptionSpec> kValidateOptions = {
    {"set", true, true, "KEY=VALUE", "Override a config field, e.g. --set optim.lr=3e-4"},
    {"json", false, false, "", "Print problems and figures as one JSON object on stdout"},
    {"help", false, false, "", "Show this help"},
};

namespace {

nlohmann::json toJson(const std::vector<protocol::Problem>& problems, const protocol::DerivedFigures* f) {
  nlohmann::json j;
  j["problems"] = nlohmann::json::array();
  for (const auto& p : problems) {
    j["problems"].push_back({{"severity", p.isError() ? "error" : "warning"},
                             {"path", p.path},
                             {"message", p.message},
                             {"fix", p.fix}});
  }
  if (f != nullptr) {
    nlohmann::json d = {{"world_size", f->worldSize},
                        {"steps_per_epoch", f->stepsPerEpoch},
                        {"optimizer_steps_per_epoch", f->optimizerStepsPerEpoch},
                        {"total_steps", f->totalSteps},
                        {"total_optimizer_steps", f->totalOptimizerSteps},
                        {"scheduler_steps", f->schedulerSteps},
                        {"checkpoint_every_steps", f->checkpointEverySteps},
                        {"datasets", nlohmann::json::array()}};
    for (const auto& ds : f->datasets) {
      nlohmann::json dj = {{"name", ds.name},
                           {"type", ds.type},
                           {"global_batch", ds.globalBatch},
                           {"samples_per_optimizer_step", ds.samplesPerOptimizerStep},
                           {"batches_per_epoch", ds.batchesPerEpoch},
                           {"samples_per_epoch", ds.samplesPerEpoch},
                           {"samples_total", ds.samplesTotal},
                           {"max_tokens", ds.maxTokens}};
      dj["shards"] = ds.shardCount ? nlohmann::json(*ds.shardCount) : nlohmann::json(nullptr);
      dj["passes"] = ds.passes ? nlohmann::json(*ds.passes) : nlohmann::json(nullptr);
      d["datasets"].push_back(dj);
    }
    j["figures"] = d;
  }
  return j;
}

}  // namespace

int runValidate(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kValidateOptions);
  const std::string usage = "usage: flamingo-train validate <config.yaml | -> [options]\n";
  if (!parsed) {
    io.err << "flamingo-train validate: " << parsed.status().message() << "\n" << usage;
    return kExitUsage;
  }
  if (parsed->has("help")) {
    io.out << usage
           << "\nChecks a run config and prints every problem at once (stderr), each naming the field,\n"
              "the bad value and a fix, then the figures derived from it (stdout). Exit 1 on errors.\n\n"
           << formatOptions(kValidateOptions);
    return kExitOk;
  }
  if (parsed->positionals.size() != 1) {
    io.err << "flamingo-train validate: expected one config file\n" << usage;
    return kExitUsage;
  }
  const std::string path = parsed->positionals[0];
  auto config = loadRunConfig(path, parsed->all("set"), io);
  if (!config) return kExitFailure;
  const auto problems = protocol::validateConfig(*config, protocol::FileChecks::kModelFiles);
  const bool errors = protocol::hasErrors(problems);
  protocol::DerivedFigures figures;
  if (!errors) figures = protocol::deriveFigures(*config);
  if (parsed->has("json")) {
    io.out << toJson(problems, errors ? nullptr : &figures).dump(2) << "\n";
    return errors ? kExitFailure : kExitOk;
  }
  printProblems(path, problems, io.err);
  if (errors) {
    size_t n = 0;
    for (const auto& p : problems) n += p.isError() ? 1 : 0;
    io.err << path << ": " << n << " error(s); the run cannot start\n";
    return kExitFailure;
  }
  io.out << path << ": valid" << (problems.empty() ? "" : " (with warnings)") << "\n"
         << protocol::formatFigures(figures);
  return kExitOk;
}

}  // namespace fs::cli

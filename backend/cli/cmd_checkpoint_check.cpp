// checkpoint check: whether a checkpoint loads into the model a run config
// describes, without building the model or loading a tensor: our parameters
// from backend/fsdp_plan's inventory, the checkpoint's keys from its index,
// classified by the engine's own classification (backend/state_keys) with
// the engine's key mapper. Prints what LoadReport::summary prints on resume,
// then the names of every problem; or --json. Exit 1 when it would not load.
#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/cli/config_input.h"
#include "backend/fsdp_plan/param_inventory.h"
#include "backend/inspect/checkpoint_check.h"
#include "backend/state_keys/flamingo_keys.h"

namespace fs::cli {

namespace {

namespace in = fs::inspect;
namespace sk = fs::state_keys;
using nlohmann::json;

constexpr const char* kWho = "flamingo-train checkpoint check";

json reportJson(const sk::LoadReport& r) {
  json mismatched = json::array();
  for (const auto& m : r.mismatched)
    mismatched.push_back({{"name", m.name}, {"expected", m.expected}, {"got", m.got}});
  return {{"ok", r.ok()},
          {"loaded", r.loaded},
          {"missing", r.missing},
          {"expected_frozen", r.expectedFrozen},
          {"unexpected", r.unexpected},
          {"mismatched", mismatched},
          {"ignored", r.ignored},
          {"summary", r.summary()}};
}

}  // namespace

const std::vector<OptionSpec> kCheckpointCheckOptions = {
    {"config", true, false, "FILE", "Run config (YAML) whose model the checkpoint should fit", "c"},
    {"set", true, true, "KEY=VALUE", "Override a config field"},
    {"json", false, false, "", "Print one JSON object instead of text"},
    {"help", false, false, "", "Show this help"}};

int runCheckpointCheck(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kCheckpointCheckOptions);
  const bool help = parsed && parsed->has("help");
  if (!parsed || help || !parsed->has("config") || parsed->positionals.size() != 1) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << kWho << ": " << parsed.status().message() << "\n";
    if (parsed && !help && !parsed->has("config")) os << kWho << ": --config: a run config is required\n";
    os << "usage: " << kWho
       << " --config FILE [--set KEY=VALUE]... <checkpoint> [--json]\n\n"
          "Checks that a checkpoint's model weights fit the model of a run config, from names and\n"
          "shapes only (nothing is loaded), with the engine's own key classification: loaded,\n"
          "missing, expected-frozen (frozen weights a training checkpoint leaves out), unexpected,\n"
          "mis-shaped, and ignored duplicates. Exit status 1 when the engine would refuse it.\n\n"
       << formatOptions(kCheckpointCheckOptions);
    return help ? kExitOk : kExitUsage;
  }
  auto config = loadRunConfig(parsed->get("config"), parsed->all("set"), io);
  if (!config) return kExitFailure;
  const auto& model = config->model;
  auto inventory = fsdp_plan::buildParamInventory(model);
  if (!inventory) {
    io.err << kWho << ": " << parsed->get("config") << ": " << inventory.status().message() << "\n";
    return kExitFailure;
  }
  auto layout = sk::lmKeyLayout(model.lm.family, model.lm.tied_head);
  if (!layout) {
    io.err << kWho << ": " << parsed->get("config") << ": " << layout.status().message() << "\n";
    return kExitFailure;
  }
  std::vector<in::OurParameter> ours;
  for (const auto& p : inventory->params) ours.push_back({p.name, p.shape, p.trainable});
  const std::string path = parsed->positionals[0];
  auto ckpt = in::CheckpointIndex::open(path);
  if (!ckpt) {
    io.err << kWho << ": " << ckpt.status().message() << "\n";
    return kExitFailure;
  }
  const sk::LoadReport report =
      in::checkCheckpointKeys(ckpt.value(), ours, sk::flamingoKeyMapper(layout.value()));
  if (parsed->has("json")) {
    json j = reportJson(report);
    j["path"] = path;
    j["format"] = std::string(in::formatName(ckpt->format()));
    io.out << j.dump(1) << "\n";
    return report.ok() ? kExitOk : kExitFailure;
  }
  io.out << path << ": " << (report.ok() ? "loads" : "does NOT load") << " into " << model.lm.family
         << " Flamingo (" << ours.size() << " parameters)\n  " << report.summary() << "\n";
  for (const auto& n : report.missing) io.out << "  missing:    " << n << "\n";
  for (const auto& m : report.mismatched)
    io.out << "  mis-shaped: " << m.name << ": expected " << sk::shapeString(m.expected) << ", got "
           << sk::shapeString(m.got) << "\n";
  for (const auto& n : report.unexpected) io.out << "  unexpected: " << n << "\n";
  return report.ok() ? kExitOk : kExitFailure;
}

}  // namespace fs::cli

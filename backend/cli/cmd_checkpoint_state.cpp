// checkpoint state: the training state a checkpoint holds, in words
// (backend/inspect/training_state.h): step, epoch, data position, RNG
// generators, LR scheduler, and the optimizer's state per parameter with its
// group. Human output, or --json. Torch-free.
#include <nlohmann/json.hpp>
#include <ostream>

#include "backend/cli/args.h"
#include "backend/cli/commands.h"
#include "backend/inspect/training_state.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::cli {

namespace {

namespace in = fs::inspect;
using nlohmann::json;

constexpr const char* kWho = "flamingo-train checkpoint state";

json optional(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json optional(const std::optional<std::int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

// The resume record's own fields (its field list: NOTE [Checkpoint records]), so that a field added to
// the record shows here too; its RNG states as sizes and hashes (`rng`), its data position as an object
// with the position in words, and without the manifest (`checkpoint check` verifies that).
json resumeJson(const protocol::ResumeRecord& record, const in::ResumeInfo& info) {
  json r = json::parse(protocol::encodeResumeRecord(record));
  for (const char* bytes : {"rng_torch_cpu", "rng_torch_cuda", "rng_own", "manifest"}) r.erase(bytes);
  json rng = json::array();
  for (const auto& g : info.rng) rng.push_back({{"name", g.name}, {"bytes", g.bytes}, {"hash", g.hash}});
  r["rng"] = std::move(rng);
  if (info.data) {
    // The data position is a record too, with the source's RNG state given as its size.
    const in::DataPositionInfo& p = *info.data;
    json position = json::parse(protocol::encodeDataPosition(p));
    position.erase("rng_state");
    position["rng_state_bytes"] = p.rngState.data.size();
    for (const char* list : {"batch_sizes", "cursors"}) {  // optional in the record, always listed here
      if (!position.contains(list)) position[list] = json::array();
    }
    position["text"] = in::describeDataPosition(p);
    r["data_position"] = std::move(position);
  } else {
    r["data_position"] = nullptr;
  }
  return r;
}

json stateJson(const in::TrainingState& s, const std::optional<protocol::ResumeRecord>& record) {
  json j = {
      {"path", s.path}, {"format", std::string(in::formatName(s.format))}, {"epoch", optional(s.epoch)}};
  j["resume"] = s.resume && record ? resumeJson(*record, *s.resume) : json(nullptr);
  if (s.scheduler) {
    j["lr_scheduler"] = {{"last_epoch", optional(s.scheduler->lastEpoch)},
                         {"_step_count", optional(s.scheduler->stepCount)},
                         {"base_lrs", s.scheduler->baseLrs},
                         {"_last_lr", s.scheduler->lastLr}};
  } else {
    j["lr_scheduler"] = nullptr;
  }
  if (s.optimizer) {
    json groups = json::array();
    for (const auto& g : s.optimizer->groups) {
      groups.push_back({{"index", g.index},
                        {"lr", g.lr},
                        {"weight_decay", g.weightDecay},
                        {"betas", {g.beta1, g.beta2}},
                        {"eps", g.eps},
                        {"initial_lr", optional(g.initialLr)},
                        {"params", g.params}});
    }
    json params = json::array();
    for (const auto& p : s.optimizer->params) {
      params.push_back({{"id", p.id},
                        {"name", p.name.empty() ? json(nullptr) : json(p.name)},
                        {"group", p.group ? json(*p.group) : json(nullptr)},
                        {"step", optional(p.step)},
                        {"exp_avg_norm", optional(p.expAvgNorm)},
                        {"exp_avg_sq_norm", optional(p.expAvgSqNorm)},
                        {"shape", p.shape}});
    }
    j["optimizer"] = {
        {"param_groups", groups},
        {"params", params},
        {"names_from", s.optimizer->nameSource.empty() ? json(nullptr) : json(s.optimizer->nameSource)}};
  } else {
    j["optimizer"] = nullptr;
  }
  j["absent"] = s.absent;
  return j;
}

}  // namespace

const std::vector<OptionSpec> kCheckpointStateOptions = {
    {"json", false, false, "", "Print one JSON object instead of text"},
    {"params", true, false, "N", "Optimizer parameters to list in text (default 20; 0: all)"},
    {"help", false, false, "", "Show this help"}};

int runCheckpointState(const std::vector<std::string>& args, Io& io) {
  auto parsed = parseArgs(args, kCheckpointStateOptions);
  const bool help = parsed && parsed->has("help");
  const auto paramsOption = parsed ? countOption(*parsed, "params", 20) : protocol::StatusOr<long>(20L);
  const bool badCount = !paramsOption;
  const std::size_t maxParams = badCount ? 0 : static_cast<std::size_t>(paramsOption.value());
  if (!parsed || help || badCount || parsed->positionals.size() != 1) {
    auto& os = help ? io.out : io.err;
    if (!parsed) os << kWho << ": " << parsed.status().message() << "\n";
    if (badCount) os << kWho << ": " << paramsOption.status().message() << "\n";
    os << "usage: " << kWho
       << " <checkpoint> [--params N] [--json]\n\n"
          "Shows the training state a checkpoint holds: optimizer step, epoch and data position,\n"
          "RNG generators (sizes and hashes), the LR scheduler, and AdamW's state per parameter\n"
          "(step, exp_avg and exp_avg_sq norms) with its group's lr, weight_decay, betas and eps.\n"
          "Parts a checkpoint does not hold are named as not in it.\n\n"
       << formatOptions(kCheckpointStateOptions);
    return help ? kExitOk : kExitUsage;
  }
  const std::string path = parsed->positionals[0];
  auto ckpt = in::CheckpointIndex::open(path);
  if (!ckpt) {
    io.err << kWho << ": " << ckpt.status().message() << "\n";
    return kExitFailure;
  }
  auto state = in::readTrainingState(ckpt.value());
  if (!state) {
    io.err << kWho << ": " << state.status().message() << "\n";
    return kExitFailure;
  }
  if (parsed->has("json")) {
    auto record = in::readResumeRecord(ckpt.value());
    if (!record) {
      io.err << kWho << ": " << record.status().message() << "\n";
      return kExitFailure;
    }
    io.out << stateJson(state.value(), record.value()).dump(1) << "\n";
  } else {
    io.out << in::formatTrainingState(state.value(), maxParams);
  }
  return kExitOk;
}

}  // namespace fs::cli

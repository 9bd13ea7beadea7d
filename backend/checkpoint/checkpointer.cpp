// Checkpointer: pretrained weights in; the full file (rank 0, gathered unit
// by unit under FSDP) or the sharded directory (every rank its shards, NOTE
// [Sharded checkpoints] in checkpoint_sharded.h) out, then pruning and the
// event. Resuming is checkpointer_resume.cpp.
#include "backend/checkpoint/checkpointer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_recovery.h"
#include "backend/checkpoint/checkpoint_sharded.h"

namespace fs::checkpoint {

using protocol::Status;

namespace {

// A file's size, or the sum of a sharded checkpoint's files.
int64_t checkpointBytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec))
    return static_cast<int64_t>(std::filesystem::file_size(path, ec));
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    if (e.is_regular_file()) n += static_cast<int64_t>(e.file_size(ec));
  }
  return n;
}

// Each parameter once (a tied one under its first name), in the model's order.
model::NamedTensors uniqueParameters(const model::NamedTensors& all) {
  std::set<const c10::TensorImpl*> seen;
  model::NamedTensors out;
  for (const auto& [name, t] : all) {
    if (seen.insert(t.unsafeGetTensorImpl()).second) out.emplace_back(name, t);
  }
  return out;
}

}  // namespace

Checkpointer::Checkpointer(const protocol::RunConfig& config, const protocol::RunDir& dir,
                           const data::SpecialTokenIds& tokens, TrainerState& state,
                           std::shared_ptr<distributed::Communicator> comm,
                           std::shared_ptr<spdlog::logger> log, telemetry::TelemetryEmitter* events,
                           CheckpointerOptions options)
    : config_(config),
      dir_(dir),
      tokens_(tokens),
      state_(state),
      comm_(std::move(comm)),
      log_(std::move(log)),
      events_(events),
      options_(options) {}

void Checkpointer::warn(const std::string& code, const std::string& message) {
  log_->warn("{}", message);
  if (events_) events_->emit(protocol::WarningEvent{code, message, static_cast<int>(options_.rank)});
}

Status Checkpointer::importPretrained() {
  if (options_.shapesOnly || (config_.model.lm.path.empty() && config_.model.vision.pretrained.empty())) {
    return Status::ok();
  }
  auto loaded = loadPretrained(*state_.model, config_.model);
  if (!loaded) return loaded.status();
  for (const auto& line : loaded->info) log_->info("{}", line);
  for (const auto& w : loaded->warnings) warn("pretrained_unexpected_keys", w);
  return Status::ok();
}

ResumeState Checkpointer::resumeState(protocol::CheckpointKind kind) const {
  ResumeState r;
  r.kind = kind == protocol::CheckpointKind::kEpoch ? "epoch" : "step";
  r.step = state_.counters.step;
  r.iteration = state_.counters.iteration;
  r.epoch = state_.counters.epoch;
  r.data = state_.source->position();
  r.rng = step::captureRng();
  if (state_.scaler) r.gradScaler = state_.scaler->state();
  return r;
}

Status Checkpointer::save(protocol::CheckpointKind kind) {
  const auto t0 = std::chrono::steady_clock::now();
  const TrainCounters& counters = state_.counters;
  const int64_t epoch = kind == protocol::CheckpointKind::kEpoch ? counters.epoch - 1 : counters.epoch;
  const auto path = dir_.checkpointFile(kind, static_cast<int>(epoch), counters.step);
  model::FlamingoImpl& model = *state_.model;
  const step::GroupedAdamW& optimizer = *state_.optimizer;
  const step::LrSchedule& schedule = *state_.schedule;
  model::NamedTensors buffers;
  for (const auto& b : model.named_buffers()) buffers.emplace_back(b.key(), b.value());
  if (state_.sharded && config_.checkpoint.format == "sharded") {
    ShardedCheckpointSave s;
    s.model = state_.sharded.get();
    s.strategy = config_.parallel.sharding_strategy;
    s.shards = &state_.shards;
    s.shardOptimizer = optimizer.stateDict(schedule.baseLrs());
    s.trainable = state_.trainable;
    s.weightDecay = config_.optim.weight_decay;
    // The members keep their shapes while their storage is freed: enough for the order and the manifest.
    const auto parameters = uniqueParameters(model.namedParameters());
    for (const auto& [name, t] : parameters) s.parameterOrder.push_back(name);
    s.buffers = checkpointModelState({}, buffers);
    s.epoch = epoch;
    s.scheduler = schedule.stateDict();
    s.resume = resumeState(kind);
    s.resume.manifest = buildCheckpointManifest(config_, tokens_, parameters, {});
    if (Status st = writeShardedCheckpoint(path, s, *comm_, options_.writeEnv); !st) return st;
    if (options_.rank != 0) return Status::ok();
  } else {
    CheckpointContents c;
    model::NamedTensors parameters;
    if (state_.sharded) {
      // Every rank takes part in the gathers; rank 0 keeps the values (NOTE [FSDP in the engine]).
      parameters = state_.sharded->fullParameters(options_.rank == 0);
      c.optimizer = fsdp::toFullState(optimizer.stateDict(schedule.baseLrs()), state_.trainable,
                                      state_.shards, *state_.sharded, config_.optim.weight_decay);
    }
    if (options_.rank != 0) return Status::ok();  // replicas: rank 0's copy is everyone's
    if (!state_.sharded) {
      parameters = model.namedParameters();
      c.optimizer = optimizer.stateDict(schedule.baseLrs());
    }
    c.epoch = epoch;
    c.modelState = checkpointModelState(parameters, buffers);
    c.scheduler = schedule.stateDict();
    c.resume = resumeState(kind);
    c.resume.manifest = buildCheckpointManifest(config_, tokens_, parameters, c.modelState);
    if (Status s = writeCheckpoint(path, c, options_.writeEnv); !s) return s;
  }
  const int64_t bytes = checkpointBytes(path);
  if (Status s = prune(kind, epoch); !s) return s;
  const std::string rel = path.filename().string();
  log_->info("checkpoint {} ({} bytes)", rel, bytes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (events_)
    events_->emit(
        protocol::CheckpointEvent{counters.step, static_cast<int>(epoch), rel, bytes, kind, seconds});
  return Status::ok();
}

// Only after the new checkpoint is durable: prune step checkpoints, delete the previous epoch's. Each
// removal leaves the checkpoint whole or gone (removeCheckpoint).
Status Checkpointer::prune(protocol::CheckpointKind kind, int64_t epoch) {
  protocol::WriteEnv& env = protocol::writeEnvOr(options_.writeEnv);
  std::error_code ec;
  if (kind == protocol::CheckpointKind::kStep) {
    std::vector<std::pair<int64_t, std::filesystem::path>> steps;
    for (const auto& e : std::filesystem::directory_iterator(dir_.root(), ec)) {
      auto name = protocol::parseCheckpointFileName(e.path().filename().string());
      if (name && name->kind == protocol::CheckpointKind::kStep) steps.emplace_back(name->step, e.path());
    }
    std::sort(steps.begin(), steps.end());
    // NOTE [Loss-spike guard]: from the newest at or before step - window on, a rollback may need them.
    // None that old yet: every one may become it.
    int64_t pin = INT64_MAX;
    if (guardWindow_ > 0 && !steps.empty()) {
      pin = steps.front().first;
      for (const auto& [step, path] : steps) {
        if (step <= state_.counters.step - guardWindow_) pin = step;
      }
    }
    std::string kept;
    for (size_t i = 0; i + config_.checkpoint.keep_last < steps.size(); ++i) {
      if (steps[i].first >= pin) {
        kept += (kept.empty() ? "" : ", ") + steps[i].second.filename().string();
        continue;
      }
      if (Status s = removeCheckpoint(steps[i].second, env); !s)
        return Status::ioError("pruning old checkpoints: " + s.message());
    }
    if (!kept.empty()) {
      const std::string message = "checkpoint.keep_last is " + std::to_string(config_.checkpoint.keep_last) +
                                  "; also kept " + kept +
                                  " for the loss-spike guard (a rollback goes to the newest "
                                  "step checkpoint before its window of " +
                                  std::to_string(guardWindow_) + " steps)";
      if (!guardKeptWarned_) {
        warn("guard_keeps_checkpoints", message);  // once; the log names them every time
        guardKeptWarned_ = true;
      } else {
        log_->info("{}", message);
      }
    }
  } else if (config_.checkpoint.delete_previous && epoch > 0) {
    const auto previous = dir_.checkpointFile(kind, static_cast<int>(epoch - 1), 0);
    if (Status s = removeCheckpoint(previous, env); !s)
      return Status::ioError("deleting the previous epoch's checkpoint: " + s.message());
  }
  return Status::ok();
}

std::optional<std::pair<std::filesystem::path, int64_t>> Checkpointer::stepCheckpointAtOrBefore(
    int64_t atOrBefore) const {
  std::optional<std::pair<std::filesystem::path, int64_t>> best;
  for (const auto& candidate : checkpointCandidates(dir_.root(), nullptr)) {  // complete ones only
    auto name = protocol::parseCheckpointFileName(candidate.filename().string());
    if (!name || name->kind != protocol::CheckpointKind::kStep || name->step > atOrBefore) continue;
    if (!best || name->step > best->second) best = std::make_pair(candidate, name->step);
  }
  return best;
}

Status Checkpointer::rollBackTo(const std::filesystem::path& path) {
  auto ck = readCheckpoint(path);
  if (!ck) return ck.status();
  if (Status s = verifyCheckpointManifest(ck->resume.manifest, ck->modelState, path); !s) return s;
  return resumeFrom(ck.value(), path);
}

Status Checkpointer::removeAbandoned(int64_t step, int64_t epoch) {
  Status result = Status::ok();
  if (options_.rank == 0) {
    protocol::WriteEnv& env = protocol::writeEnvOr(options_.writeEnv);
    std::error_code ec;
    std::vector<std::filesystem::path> abandoned;
    for (const auto& e : std::filesystem::directory_iterator(dir_.root(), ec)) {
      auto name = protocol::parseCheckpointFileName(e.path().filename().string());
      if (!name) continue;
      if ((name->kind == protocol::CheckpointKind::kStep && name->step > step) ||
          (name->kind == protocol::CheckpointKind::kEpoch && name->epoch >= epoch))
        abandoned.push_back(e.path());
    }
    for (const auto& p : abandoned) {
      if (Status s = removeCheckpoint(p, env); !s) {
        result = Status::ioError("removing a checkpoint the rollback abandoned: " + s.message());
        break;
      }
      log_->info("rollback: removed {} (after the step it went back to)", p.filename().string());
    }
  }
  if (options_.world > 1) comm_->barrier("rollback checkpoints");
  return result;
}

}  // namespace fs::checkpoint

// Trainer checkpoints: the full file (rank 0, gathered unit by unit under
// FSDP) or the sharded directory (every rank its shards, NOTE [Sharded
// checkpoints] in checkpoint_sharded.h), then pruning and the event.
#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::engine {

using protocol::Status;

namespace {

// A file's size, or the sum of a sharded checkpoint's files.
int64_t checkpointBytes(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return static_cast<int64_t>(std::filesystem::file_size(path, ec));
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

ResumeState Trainer::resumeState(protocol::CheckpointKind kind) const {
  ResumeState r;
  r.kind = kind == protocol::CheckpointKind::kEpoch ? "epoch" : "step";
  r.step = step_;
  r.iteration = iteration_;
  r.epoch = epoch_;
  r.data = source_->position();
  r.rng = train::captureRng();
  return r;
}

Status Trainer::saveCheckpoint(protocol::CheckpointKind kind) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t epoch = kind == protocol::CheckpointKind::kEpoch ? epoch_ - 1 : epoch_;
  const auto path = dir_.checkpointFile(kind, static_cast<int>(epoch), step_);
  model::NamedTensors buffers;
  for (const auto& b : model_->named_buffers()) buffers.emplace_back(b.key(), b.value());
  if (sharded_ && config_.checkpoint.format == "sharded") {
    ShardedCheckpointSave s;
    s.model = sharded_.get();
    s.strategy = config_.parallel.sharding_strategy;
    s.shards = &shards_;
    s.shardOptimizer = optimizer_->stateDict(schedule_->baseLrs());
    s.trainable = trainable_;
    s.weightDecay = config_.optim.weight_decay;
    // The members keep their shapes while their storage is freed: enough for the order and the manifest.
    const auto parameters = uniqueParameters(model_->namedParameters());
    for (const auto& [name, t] : parameters) s.parameterOrder.push_back(name);
    s.buffers = checkpointModelState({}, buffers);
    s.epoch = epoch;
    s.scheduler = schedule_->stateDict();
    s.resume = resumeState(kind);
    s.resume.manifest = buildCheckpointManifest(config_, tokens_, parameters, {});
    if (Status st = writeShardedCheckpoint(path, s, *comm_); !st) return st;
    if (options_.rank != 0) return Status::ok();
  } else {
    CheckpointContents c;
    model::NamedTensors parameters;
    if (sharded_) {
      // Every rank takes part in the gathers; rank 0 keeps the values (NOTE [FSDP in the engine]).
      parameters = sharded_->fullParameters(options_.rank == 0);
      c.optimizer = fsdp::toFullState(optimizer_->stateDict(schedule_->baseLrs()), trainable_, shards_, *sharded_,
                                      config_.optim.weight_decay);
    }
    if (options_.rank != 0) return Status::ok();  // replicas: rank 0's copy is everyone's
    if (!sharded_) {
      parameters = model_->namedParameters();
      c.optimizer = optimizer_->stateDict(schedule_->baseLrs());
    }
    c.epoch = epoch;
    c.modelState = checkpointModelState(parameters, buffers);
    c.scheduler = schedule_->stateDict();
    c.resume = resumeState(kind);
    c.resume.manifest = buildCheckpointManifest(config_, tokens_, parameters, c.modelState);
    if (Status s = writeCheckpoint(path, c); !s) return s;
  }
  const int64_t bytes = checkpointBytes(path);
  // Only after the new checkpoint is durable: prune step checkpoints, delete the previous epoch's
  // (remove_all: a sharded checkpoint is a directory).
  std::error_code ec;
  if (kind == protocol::CheckpointKind::kStep) {
    std::vector<std::pair<int64_t, std::filesystem::path>> steps;
    for (const auto& e : std::filesystem::directory_iterator(dir_.root(), ec)) {
      auto name = protocol::parseCheckpointFileName(e.path().filename().string());
      if (name && name->kind == protocol::CheckpointKind::kStep) steps.emplace_back(name->step, e.path());
    }
    std::sort(steps.begin(), steps.end());
    while (static_cast<int64_t>(steps.size()) > config_.checkpoint.keep_last) {
      std::filesystem::remove_all(steps.front().second, ec);
      steps.erase(steps.begin());
    }
  } else if (config_.checkpoint.delete_previous && epoch > 0) {
    std::filesystem::remove_all(dir_.checkpointFile(kind, static_cast<int>(epoch - 1), 0), ec);
  }
  const std::string rel = path.filename().string();
  log_->info("checkpoint {} ({} bytes)", rel, bytes);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  emit(protocol::CheckpointEvent{step_, static_cast<int>(epoch), rel, bytes, kind, seconds});
  return Status::ok();
}

}  // namespace fs::engine

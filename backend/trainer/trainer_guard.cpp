// The loss-spike guard's side of the Trainer: after a step, the verdict; on a spike the rollback in
// this process (NOTE [Loss-spike guard] in loss_spike_guard.h); the batches a rollback or
// FS_SKIP_BATCHES skips; the checkpoints' RNG states the other ranks go back to.
#include <torch/torch.h>

#include <algorithm>
#include <sstream>

#include "backend/trainer/data_sources.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;

namespace {

std::string relativeTo(const std::filesystem::path& p, const std::filesystem::path& root) {
  const auto rel = p.lexically_relative(root);
  return rel.empty() || rel.string().starts_with("..") ? p.string() : rel.string();
}

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

void Trainer::noteStepCheckpoint() {
  if (!guard_.enabled()) return;
  const int64_t step = state_.counters.step;
  rngAtCheckpoint_[step] = step::captureRng();
  // As the pruning keeps the checkpoints: from the newest at or before step - window on.
  int64_t pin = rngAtCheckpoint_.begin()->first;  // none that old yet: keep them all
  for (const auto& [s, rng] : rngAtCheckpoint_) {
    if (s <= step - config_.guard.window) pin = s;
  }
  rngAtCheckpoint_.erase(rngAtCheckpoint_.begin(), rngAtCheckpoint_.lower_bound(pin));
}

Status Trainer::skipBatches(int64_t count, int64_t* skipped) {
  *skipped = 0;
  checkpoint::TrainCounters& counters = state_.counters;
  for (int64_t i = 0; i < count; ++i) {
    auto next = state_.source->next();
    if (!next) return Status::invalidArgument("data: " + next.status().message());
    if (!next.value()) break;  // the epoch's end: the skip ends with it
    ++counters.iteration;
    ++counters.stepInEpoch;
    ++*skipped;
  }
  return Status::ok();
}

protocol::StatusOr<bool> Trainer::guardStep(const std::map<std::string, double>& losses) {
  const auto verdict = guard_.observe(state_.counters.step, losses);
  if (!verdict) return false;
  const protocol::GuardConfig& g = config_.guard;
  const int64_t spikeStep = state_.counters.step;
  const int64_t spikeIteration = state_.counters.iteration;
  if (guard_.rollbacks() >= g.max_rollbacks) {
    return Status::invalidArgument(
        "loss-spike guard: " + verdict->reason + " at step " + std::to_string(spikeStep) +
        ", and the run has rolled back " + std::to_string(guard_.rollbacks()) +
        (guard_.rollbacks() == 1 ? " time" : " times") + " already: guard.max_rollbacks is " +
        std::to_string(g.max_rollbacks) + " (raise it, or look at the data and the learning rate)");
  }
  const auto target = checkpointer_->stepCheckpointAtOrBefore(spikeStep - g.window - 1);
  if (!target) {
    const std::string message =
        "loss-spike guard: " + verdict->reason + " at step " + std::to_string(spikeStep) +
        ", but no step checkpoint is older than its window (step <= " +
        std::to_string(spikeStep - g.window - 1) + "); training on without a rollback";
    log_->warn("{}", message);
    emit(protocol::WarningEvent{"guard_no_checkpoint", message, static_cast<int>(options_.rank)});
    return false;
  }
  const auto [path, toStep] = *target;
  const auto t0 = std::chrono::steady_clock::now();
  reporter_->flush();  // the spike's step event goes out before the rollback's
  if (place_.fsdp) {
    // The model is resumed whole and sharded again, as at start-up (NOTE [FSDP in the engine]).
    state_.model->setUnitHooks(nullptr);  // the old ShardedModel goes while its model is still there
    state_.sharded.reset();
    state_.shards.clear();
    state_.trainable.clear();
    state_.optimizer.reset();
    state_.schedule.reset();
    state_.scaler.reset();
    state_.model = model::Flamingo(nullptr);
    if (Status s = buildModelAndOptimizer(); !s) return s;
  }
  // A fresh source takes the checkpoint's data position (the DataSource contract).
  auto sources = makeDataSources(config_, dir_.root(), options_.rank, options_.world, options_.makeSource);
  if (!sources) return sources.status();
  state_.source = std::move(sources->train);
  if (Status s = checkpointer_->rollBackTo(path); !s) return s;
  if (const auto rng = rngAtCheckpoint_.find(toStep); rng != rngAtCheckpoint_.end()) {
    if (Status s = step::restoreRng(rng->second); !s) return s;
  }
  if (place_.fsdp) {
    if (Status s = agreeAfterSetUp(); !s) return s;
    if (Status s = shardModel(); !s) return s;
    state_.sharded->setReduceDuringBackward(structureChecked_);
  }
  const int64_t toIteration = state_.counters.iteration;
  int64_t skipped = 0;
  if (Status s = skipBatches(spikeIteration - toIteration + g.skip_batches, &skipped); !s) return s;
  if (Status s = checkpointer_->removeAbandoned(toStep, state_.counters.epoch); !s) return s;
  guard_.rewindTo(toStep);
  rngAtCheckpoint_.erase(rngAtCheckpoint_.upper_bound(toStep), rngAtCheckpoint_.end());
  lrFactor_ = g.lr_factor;
  lrFactorStepsLeft_ = g.lr_factor < 1.0 ? g.lr_factor_steps : 0;
  protocol::RollbackEvent e;
  e.step = spikeStep;
  e.to_step = toStep;
  e.checkpoint = relativeTo(path, dir_.root());
  e.dataset = verdict->dataset;
  e.rule = g.rule;
  e.reason = verdict->reason;
  e.losses = verdict->losses;
  e.batches_skipped = skipped;
  e.lr_factor = g.lr_factor;
  e.lr_factor_steps = g.lr_factor < 1.0 ? g.lr_factor_steps : 0;
  e.rollbacks = guard_.rollbacks();
  e.max_rollbacks = static_cast<int>(g.max_rollbacks);
  emit(e);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string line =
      "loss-spike guard: rollback " + std::to_string(e.rollbacks) + "/" + std::to_string(e.max_rollbacks) +
      ": " + e.reason + " at step " + std::to_string(spikeStep) + "; back to step " + std::to_string(toStep) +
      " (" + e.checkpoint + "), " + std::to_string(skipped) + " batches skipped" +
      (e.lr_factor_steps > 0
           ? ", lr x " + fmt(e.lr_factor) + " for " + std::to_string(e.lr_factor_steps) + " steps"
           : "") +
      " (" + fmt(seconds) + " s)";
  if (options_.rank == 0) {
    log_->warn("{}", line);
  } else {
    log_->info("{}", line);
  }
  return true;
}

}  // namespace fs::trainer

// Checkpointer: which checkpoint to resume from, and loading it into the
// TrainerState (ours exactly; OpenFlamingo's from the next epoch on).
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <set>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_recovery.h"
#include "backend/checkpoint/checkpointer.h"

namespace fs::checkpoint {

using protocol::Status;

Status Checkpointer::recoverLeftovers() {
  Status recovered = Status::ok();
  if (options_.rank == 0) {
    std::vector<std::string> notes;
    recovered = recoverCheckpointLeftovers(dir_.root(), protocol::writeEnvOr(options_.writeEnv), &notes);
    for (const auto& n : notes) warn("checkpoint_recovered", n);
  }
  // Nobody scans the run directory while rank 0 may still be moving things in it.
  if (options_.world > 1) comm_->barrier("checkpoint recovery");
  if (!recovered) return Status::ioError("recovering interrupted checkpoint writes: " + recovered.message());
  return Status::ok();
}

protocol::StatusOr<Resumed> Checkpointer::resume() {
  if (Status s = recoverLeftovers(); !s) return s;
  if (!config_.checkpoint.resume_from.empty()) {
    const std::filesystem::path path = config_.checkpoint.resume_from;
    auto ck = readCheckpoint(path);
    if (ck) {
      if (Status s = verifyCheckpointManifest(ck->resume.manifest, ck->modelState, path); !s) return s;
      if (Status s = resumeFrom(ck.value(), path); !s) return s;
      return Resumed::kCheckpoint;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return ck.status();  // sharded: never an OpenFlamingo file
    // Not ours (no 'flamingo_studio' key, or a plain Python torch.save dict
    // LibTorch cannot read): try it as an OpenFlamingo checkpoint.
    auto foreign = readForeignCheckpoint(path.string());
    if (foreign && !foreign->hasFlamingoStudioKey) {
      if (Status s = resumeFromOpenFlamingo(foreign.value(), path); !s) return s;
      return Resumed::kOpenFlamingo;
    }
    if (!foreign && foreign.status().code() != Status::Code::kCorruption &&
        foreign.status().code() != Status::Code::kUnsupported) {
      return foreign.status();
    }
    return ck.status();
  }
  // Newest first; only the checkpoint actually used is read in full.
  std::vector<std::string> skipped;
  std::optional<CheckpointContents> chosen;
  std::filesystem::path chosenPath;
  for (const auto& candidate : checkpointCandidates(dir_.root(), &skipped)) {
    auto ck = readCheckpoint(candidate);
    if (ck) {
      if (Status s = verifyCheckpointManifest(ck->resume.manifest, ck->modelState, candidate); !s) {
        skipped.push_back(s.message());
        continue;
      }
      chosen = std::move(ck.value());
      chosenPath = candidate;
      break;
    }
    skipped.push_back(ck.status().message());
  }
  for (const auto& s : skipped) {
    log_->warn("skipping checkpoint: {}", s);
    if (events_)
      events_->emit(protocol::WarningEvent{"checkpoint_skipped", s, static_cast<int>(options_.rank)});
  }
  if (!chosen) return Resumed::kNo;
  if (Status s = resumeFrom(*chosen, chosenPath); !s) return s;
  return Resumed::kCheckpoint;
}

// Frozen weights are not in a checkpoint (OpenFlamingo's filter): they are
// expected-frozen; a missing trainable one, an unexpected or a mis-shaped key
// is an error.
Status Checkpointer::checkResumeLoad(model::LoadReport report, const std::string& where) const {
  std::set<std::string> trainable;
  for (const auto& p : state_.trainable) trainable.insert(p.name);
  report.markExpectedFrozen([&](const std::string& name) { return trainable.count(name) == 0; });
  if (!report.ok()) {
    return Status::invalidArgument(where + ": " + report.summary() +
                                   (report.mismatched.empty() ? "" : " (wrong base model or model shape?)"));
  }
  log_->info("{}: {}", where, report.summary());
  return Status::ok();
}

Status Checkpointer::resumeFromOpenFlamingo(const ForeignCheckpoint& foreign,
                                            const std::filesystem::path& path) {
  const std::string where = path.string();
  if (!options_.shapesOnly) {  // as in resumeFrom
    if (Status s = checkResumeLoad(state_.model->loadStateDict(foreign.model), where); !s) return s;
  }
  for (const auto& note : foreign.notes) warn("openflamingo_resume_state", where + ": " + note);
  TrainCounters& counters = state_.counters;
  counters.epoch = foreign.epoch ? *foreign.epoch + 1 : 0;  // OpenFlamingo continues after the saved epoch
  counters.stepInEpoch = 0;
  counters.iteration = counters.epoch * state_.source->stepsPerEpoch();
  counters.step = counters.epoch * options_.optimizerStepsPerEpoch;
  bool optimizerLoaded = false;
  if (foreign.optimizer) {
    if (Status s = state_.optimizer->loadStateDict(*foreign.optimizer); s) {
      optimizerLoaded = true;
    } else {
      warn("openflamingo_optimizer_state",
           where + ": optimizer state not loaded (" + s.message() + "); starting with a fresh optimizer");
      state_.optimizer = std::make_unique<step::GroupedAdamW>(state_.trainable, config_.optim);
    }
  } else {
    warn("openflamingo_optimizer_state",
         where + ": no optimizer state in it; starting with a fresh optimizer");
  }
  bool schedulerLoaded = false;
  if (optimizerLoaded && foreign.scheduler) {
    if (Status s = state_.schedule->loadStateDict(*foreign.scheduler); s) {
      schedulerLoaded = true;
      counters.step = foreign.scheduler->lastEpoch;  // LambdaLR's last_epoch counts optimizer steps
    } else {
      warn("openflamingo_scheduler_state", where + ": lr scheduler state not loaded (" + s.message() + ")");
    }
  }
  if (!schedulerLoaded) {
    // Continue the schedule where epoch+1 starts.
    std::vector<double> baseLrs(state_.optimizer->groups().size(), config_.optim.lr);
    state_.schedule =
        std::make_unique<step::LrSchedule>(step::scheduleKindFromName(config_.optim.scheduler), baseLrs,
                                           config_.optim.warmup_steps, options_.schedulerSteps);
    step::LrSchedulerStateDict lastStep;
    lastStep.baseLrs = baseLrs;
    lastStep.lastEpoch = counters.step;
    (void)state_.schedule->loadStateDict(lastStep);
  }
  state_.schedule->apply(state_.optimizer->adamw());
  warn("openflamingo_resume",
       "resumed from an OpenFlamingo checkpoint: data position and RNG state are not in it (" + where +
           ", continuing at epoch " + std::to_string(counters.epoch) + ")");
  log_->info("resumed from OpenFlamingo checkpoint {} at epoch {}, optimizer step {}", where, counters.epoch,
             counters.step);
  return Status::ok();
}

Status Checkpointer::resumeFrom(const CheckpointContents& ck, const std::filesystem::path& path) {
  // A shapes-only rank takes its values from its node's first rank (NOTE [Values from the node's first
  // rank]): writing the checkpoint into its parameters would only make them resident.
  if (!options_.shapesOnly) {
    std::map<std::string, torch::Tensor> modelState(ck.modelState.begin(), ck.modelState.end());
    if (Status s = checkResumeLoad(state_.model->loadStateDict(modelState), path.string()); !s) return s;
  }
  if (Status s = state_.optimizer->loadStateDict(ck.optimizer); !s) return s;
  if (Status s = state_.schedule->loadStateDict(ck.scheduler); !s) return s;
  state_.schedule->apply(state_.optimizer->adamw());
  if (state_.scaler && ck.resume.gradScaler) {
    state_.scaler->load(*ck.resume.gradScaler);
  } else if (state_.scaler) {
    log_->warn("{}: no loss scale saved (written by a run without loss scaling); starting from {}",
               path.string(), state_.scaler->scaleValue());
  }
  if (Status s = restoreDataPosition(ck.resume.data); !s) return s;
  // The saved generator state is rank 0's; other ranks continue from their
  // own seed (NOTE [Seeding]), so dropout differs per rank as it should.
  if (options_.rank == 0) {
    if (Status s = step::restoreRng(ck.resume.rng); !s) return s;
  }
  TrainCounters& counters = state_.counters;
  const data::DataSource& source = *state_.source;
  counters.step = ck.resume.step;
  counters.iteration = ck.resume.iteration;
  counters.epoch = ck.resume.data.epoch;
  counters.stepInEpoch = counters.iteration - counters.epoch * source.stepsPerEpoch();
  const auto& savedSizes = ck.resume.data.batchSizes;
  if (ck.resume.data.world != options_.world ||
      (!savedSizes.empty() && savedSizes != source.position().batchSizes)) {
    const auto consumed = source.position().batchesConsumed;
    counters.stepInEpoch = consumed.empty() ? 0 : *std::min_element(consumed.begin(), consumed.end());
    counters.iteration = counters.epoch * source.stepsPerEpoch() + counters.stepInEpoch;
  }
  log_->info("resumed from {} at epoch {}, iteration {}, optimizer step {}", path.string(), counters.epoch,
             counters.iteration, counters.step);
  return Status::ok();
}

// Every rank consumes its stream in lockstep, so rank 0's position holds for
// all ranks of the same world. For another world size the position is
// carried over by samples: synthetic data then continues exactly where it
// stopped when world x batch divides the samples consumed.
Status Checkpointer::restoreDataPosition(data::DataPosition p) {
  data::DataSource& source = *state_.source;
  const std::vector<int64_t> nowSizes = source.position().batchSizes;
  if (p.batchSizes.empty()) p.batchSizes = nowSizes;  // written before batch sizes were recorded
  if (p.world == options_.world && p.batchSizes == nowSizes) {
    if (p.rank != options_.rank) p.cursors.clear();  // rank 0's reader: NOTE [Data position cursors]
    p.rank = options_.rank;
    return source.restore(p);
  }
  const int64_t savedWorld = p.world;
  std::string lost;
  for (size_t i = 0; i < p.batchesConsumed.size() && i < nowSizes.size() && i < p.batchSizes.size(); ++i) {
    const int64_t samples = p.batchesConsumed[i] * savedWorld * p.batchSizes[i];
    const int64_t global = options_.world * nowSizes[i];
    p.batchesConsumed[i] = std::min(samples / global, source.stepsPerEpoch());
    if (samples % global != 0) lost += (lost.empty() ? "" : ", ") + p.datasets[i];
  }
  p.rank = options_.rank;
  p.world = options_.world;
  p.batchSizes = nowSizes;
  p.cursors.clear();  // the old split's shards: NOTE [Data position cursors]
  if (Status s = source.restore(p); !s) return s;
  std::string message = "resumed a run of " + std::to_string(savedWorld) + " ranks on " +
                        std::to_string(options_.world) +
                        " (or with other batch sizes): the data position was carried over by samples";
  if (!lost.empty()) message += " (rounded down for " + lost + ": world x batch does not divide it)";
  if (p.source != "synthetic") message += "; shard streams are re-split across the new ranks";
  warn("world_size_changed", message);
  return Status::ok();
}

}  // namespace fs::checkpoint

// The training loop: epochs of iterations, control between iterations,
// checkpoints, telemetry, and a clean finish on every path.
#include "backend/trainer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/trainer/trainer_impl.h"
#include "backend/protocol/run_manifest.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/telemetry/stop_signals.h"

namespace fs::engine {

using protocol::Status;
using Clock = std::chrono::steady_clock;

namespace {
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

protocol::StatusOr<TrainOutcome> runTraining(const protocol::RunConfig& config, const std::filesystem::path& runDir,
                                             const TrainerOptions& options) {
  Trainer trainer(config, runDir, options);
  return trainer.run();
}

protocol::StatusOr<TrainOutcome> Trainer::run() {
  started_ = Clock::now();
  try {
    if (Status s = setUp(); !s) {
      if (log_) log_->error("{}", s.message());
      if (emitter_) {
        emit(protocol::ErrorEvent{s.message(), static_cast<int>(options_.rank), "setup"});
        finish(protocol::FinishStatus::kFailed);
      }
      return s;
    }
    emitStartEvents();
    emit(protocol::StateEvent{protocol::RunState::kRunning, ""});
    if (emitter_) {
      emitter_->setProgress(step_, protocol::RunState::kRunning);
      (void)protocol::updateManifestState(dir_.root(), protocol::RunState::kRunning, protocol::unixMillisNow());
    }
    bool stop = false, kill = false;
    std::map<std::string, double> windowLoss, windowLocalLoss;
    std::map<std::string, int64_t> windowSamples;
    int windowIterations = 0;
    double windowData = 0, windowWait = 0;
    auto windowStart = Clock::now();
    const auto limitReached = [&] { return options_.maxIterations > 0 && iteration_ >= options_.maxIterations; };
    while (epoch_ < config_.optim.epochs && !stop && !kill && !limitReached()) {
      if (stepInEpoch_ == 0) source_->setEpoch(epoch_);
      while (!limitReached()) {
        if (stop || kill) break;  // agreed in the last iteration
        // NOTE [Distributed step]: with several ranks the request rides on the iteration's opening agreement.
        if (distributed()) {
          pollControl();
        } else if (Status s = handleControl(&stop, &kill); !s) {
          return s;
        }
        while (paused_ && !stop && !kill) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          emitHeartbeatIfDue();
          if (Status s = handleControl(&stop, &kill); !s) return s;
        }
        if (stop || kill) break;
        const auto t0 = Clock::now();
        auto next = source_->next();
        if (!next) throw std::runtime_error("data: " + next.status().message());
        if (!next.value()) {  // end of epoch: every rank gets here at the same iteration
          if (distributed()) {
            if (Status s = handleControl(&stop, &kill); !s) return s;
          }
          break;
        }
        const double dataTime = secondsSince(t0);
        auto result = trainIteration(*next.value());
        if (!result) throw std::runtime_error(result.status().message());
        ++stepInEpoch_;
        ++iteration_;
        ++windowIterations;
        windowData += dataTime;
        for (const auto& [name, l] : result->loss) windowLoss[name] += l;
        for (const auto& [name, l] : result->localLoss) windowLocalLoss[name] += l;
        windowWait += result->waitS;
        if (options_.onIteration) options_.onIteration(iteration_, result->loss);
        for (const auto& [name, n] : result->samples) windowSamples[name] += n;
        if (result->optimizerStepped || result->skipped) {
          StepResult mean = result.value();
          for (auto& [name, l] : mean.loss) l = windowLoss[name] / windowIterations;
          for (auto& [name, l] : mean.localLoss) l = windowLocalLoss[name] / windowIterations;
          mean.samples = windowSamples;
          mean.waitS = windowWait;
          lastLoss_ = mean.loss;
          if (emitter_) emitter_->setStep(step_);
          const double stepTime = secondsSince(windowStart);
          emitStep(mean, stepTime, windowData);
          windowLoss.clear();
          windowLocalLoss.clear();
          windowSamples.clear();
          windowIterations = 0;
          windowData = 0;
          windowWait = 0;
          emitHeartbeatIfDue();
          windowStart = Clock::now();
          if (result->optimizerStepped && valSource_ && step_ % config_.data.val_every_steps == 0) {
            if (Status s = runValidation(); !s) throw std::runtime_error(s.message());
          }
          if (result->optimizerStepped && config_.checkpoint.every_steps > 0 &&
              step_ % config_.checkpoint.every_steps == 0) {
            if (Status s = saveCheckpoint(protocol::CheckpointKind::kStep); !s) throw std::runtime_error(s.message());
          }
        }
        if (distributed()) {
          if (Status s = actOnControl(result->control, &stop, &kill); !s) return s;
        }
      }
      if (stop || kill || limitReached()) break;
      ++epoch_;
      stepInEpoch_ = 0;
      source_->setEpoch(epoch_);
      if (Status s = saveCheckpoint(protocol::CheckpointKind::kEpoch); !s) throw std::runtime_error(s.message());
    }
    flushRankReport();
    if (kill) {
      finish(protocol::FinishStatus::kStopped);
      return TrainOutcome::kKilled;
    }
    if (stop) {
      if (stopCheckpoint_) {
        if (Status s = saveCheckpoint(protocol::CheckpointKind::kStep); !s) throw std::runtime_error(s.message());
      }
      finish(protocol::FinishStatus::kStopped);
      return TrainOutcome::kStopped;
    }
    if (options_.onFinished) {
      if (Status s = options_.onFinished(*model_); !s) throw std::runtime_error(s.message());
    }
    finish(protocol::FinishStatus::kOk);
    return TrainOutcome::kFinished;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find("\nException raised from"));
    if (log_) log_->error("{}", what);
    if (emitter_) {
      emit(protocol::ErrorEvent{what, static_cast<int>(options_.rank), "train"});
      finish(protocol::FinishStatus::kFailed);
    }
    return Status::invalidArgument("training failed: " + what);
  }
}

// Rank 0 reads the control files, every rank its own signals. The request
// waits in pendingControl_ until the ranks agree on it (trainer_dist.cpp):
// between iterations on one rank and while paused, otherwise in the next
// iteration's opening agreement. Rank 0 acknowledges each command after
// the action.
void Trainer::pollControl() {
  ControlRequest want;
  if (telemetry::killRequested()) want.kill = 1;
  if (telemetry::stopRequested()) want.stop = 1;
  std::vector<protocol::ControlCommand> fresh;
  if (inbox_) {
    auto polled = inbox_->poll(step_);
    if (polled) {
      fresh = std::move(polled.value());
    } else {
      log_->warn("control: {}", polled.status().message());
    }
  }
  using protocol::ControlVerb;
  for (const auto& c : fresh) {
    switch (c.verb) {
      case ControlVerb::kStop:
        want.stop = 1;
        if (c.args.is_object() && !c.args.value("checkpoint", true)) want.noCheckpoint = 1;
        break;
      case ControlVerb::kKill: want.kill = 1; break;
      case ControlVerb::kPause: want.pause = 1, want.resume = 0; break;
      case ControlVerb::kResume: want.resume = 1, want.pause = 0; break;
      case ControlVerb::kCheckpoint: want.checkpoint = 1; break;
    }
    pendingCommands_.push_back(c);
  }
  pendingControl_.merge(want);
}

Status Trainer::handleControl(bool* stop, bool* kill) {
  pollControl();
  return actOnControl(agreeOnControl(pendingControl_), stop, kill);
}

Status Trainer::actOnControl(const ControlRequest& agreed, bool* stop, bool* kill) {
  pendingControl_ = ControlRequest{};
  const std::vector<protocol::ControlCommand> commands = std::move(pendingCommands_);
  pendingCommands_.clear();
  using protocol::ControlVerb;
  if (agreed.kill) *kill = true;
  if (agreed.stop) {
    *stop = true;
    stopCheckpoint_ = agreed.noCheckpoint == 0;
  }
  const bool wasPaused = paused_;
  if (agreed.pause && !paused_) {
    flushRankReport();  // no iteration will carry it while paused
    paused_ = true;
    emit(protocol::StateEvent{protocol::RunState::kPaused, "control"});
    if (emitter_) emitter_->setState(protocol::RunState::kPaused);
    if (options_.rank == 0)
      (void)protocol::updateManifestState(dir_.root(), protocol::RunState::kPaused, protocol::unixMillisNow());
  } else if (agreed.resume && paused_) {
    paused_ = false;
    emit(protocol::StateEvent{protocol::RunState::kRunning, "control"});
    if (emitter_) emitter_->setState(protocol::RunState::kRunning);
    if (options_.rank == 0)
      (void)protocol::updateManifestState(dir_.root(), protocol::RunState::kRunning, protocol::unixMillisNow());
  }
  Status checkpointed = Status::ok();
  if (agreed.checkpoint) checkpointed = saveCheckpoint(protocol::CheckpointKind::kStep);
  for (const auto& c : commands) {
    std::string message;
    bool ok = true;
    switch (c.verb) {
      case ControlVerb::kStop:
        message = stopCheckpoint_ ? "stopping: checkpoint, then exit" : "stopping without a checkpoint (args.checkpoint=false)";
        break;
      case ControlVerb::kKill: message = "stopping now without a checkpoint"; break;
      case ControlVerb::kPause: message = paused_ ? "paused after step " + std::to_string(step_) : "resumed again"; break;
      case ControlVerb::kResume: message = wasPaused ? "resumed" : "was not paused"; break;
      case ControlVerb::kCheckpoint:
        ok = checkpointed.isOk();
        message = ok ? "checkpoint written" : checkpointed.message();
        break;
    }
    log_->info("control {} {}: {}", c.seq, std::string(protocol::toString(c.verb)), message);
    inbox_->ack(c, ok, message, step_);
  }
  return Status::ok();
}

void Trainer::emitDataStats() {
  for (const auto& line : source_->takeProblems()) log_->warn("data: {}", line);
  // data_stats is sent when something new was dropped or filtered; the full
  // counts (per shard) are only copied then.
  const int64_t dropped = source_->notAccepted();
  if (dropped == lastDropped_) return;
  lastDropped_ = dropped;
  const auto counts = source_->dropCounts();
  protocol::DataStatsEvent e;
  e.step = step_;
  for (const auto& [name, c] : counts) {
    e.dropped[name] = c.byReason;
    e.accepted[name] = c.accepted;
    if (!c.byShard.empty()) e.shards[name] = c.byShard;
  }
  emit(std::move(e));
}

void Trainer::emitStep(const StepResult& r, double stepTime, double dataTime) {
  // Cumulative counts advance every step; the event (gate reads included) is
  // only built when it is written.
  std::map<std::string, int64_t> samples, tokens;
  std::map<std::string, double> perSecond;
  double samplesPerS = 0;
  for (const auto& [name, n] : r.samples) {
    samples[name] = (samplesSeen_[name] += n * options_.world);
    perSecond[name] = stepTime > 0 ? n * options_.world / stepTime : 0;
    samplesPerS += perSecond[name];
  }
  for (const auto& [name, n] : r.tokens) tokens[name] = (tokensSeen_[name] += n * options_.world);
  const double lr = optimizer_->adamw().param_groups().front().options().get_lr();
  // Both conditions are the same on every rank: the per-rank gather below is a collective.
  const bool stepDue = step_ % std::max<int64_t>(1, config_.telemetry.interval_steps) == 0 || r.skipped;
  const bool memoryDue = step_ % std::max<int64_t>(1, config_.telemetry.memory_every_steps) == 0;
  if (stepDue) {
    protocol::StepEvent e;
    e.step = step_;
    e.epoch = static_cast<int>(epoch_);
    e.samples = std::move(samples);
    e.tokens = std::move(tokens);
    e.loss = r.loss;
    for (const auto& [name, l] : r.loss) e.rank_loss[name] = {l};
    e.lr = lr;
    e.grad_norm = r.gradNorm;
    e.step_time_s = stepTime;
    e.data_time_s = dataTime;
    e.comm_time_s = r.waitS;
    e.samples_per_s = perSecond;
    for (const auto& g : gateValues()) e.gates.push_back({static_cast<int>(g.layer), g.attn, g.ff});
    e.skipped = r.skipped;
    e.skip_reason = r.skipReason;
    if (distributed()) {
      // NOTE [Per-rank figures] in trainer_dist.cpp: written when the other ranks' figures arrived.
      pendingReport_ = RankReport{step_, std::move(e), memoryDue, rankFigures(r, stepTime, dataTime, memoryDue)};
    } else {
      emit(std::move(e));
    }
  } else if (memoryDue && distributed()) {
    pendingReport_ = RankReport{step_, std::nullopt, true, rankFigures(r, stepTime, dataTime, true)};
  }
  if (memoryDue && !distributed()) emitMemory();
  emitDataStats();
  if (r.skipped) log_->warn("step {} skipped on every rank: {}", step_ + 1, r.skipReason);
  if (step_ % std::max<int64_t>(1, config_.telemetry.logging_steps) == 0) {
    std::string losses;
    for (const auto& [name, l] : r.loss) losses += " loss_" + name + "=" + std::to_string(l);
    log_->info("step {}/{} epoch {}{} lr={} grad_norm={}", step_, figures_.totalOptimizerSteps, epoch_, losses, lr,
               r.gradNorm.value_or(-1.0));
  }
  if (options_.onProgress) {
    Progress p;
    p.step = step_;
    p.totalSteps = figures_.totalOptimizerSteps;
    p.epoch = epoch_;
    p.loss = r.loss;
    p.lr = lr;
    p.stepTimeS = stepTime;
    p.samplesPerS = samplesPerS;
    options_.onProgress(p);
  }
}

void Trainer::emitMemory() {
  protocol::MemoryEvent m;
  m.step = step_;
  m.ranks.push_back(rankMemory());
  emit(m);
}

void Trainer::finish(protocol::FinishStatus status) {
  if (distributed() && status != protocol::FinishStatus::kFailed) {
    // Rank 0 serves the store: nobody leaves while a peer may still need it.
    try {
      comm_->barrier("finish");
    } catch (const std::exception& e) {
      if (log_) log_->error("{}", e.what());
    }
  }
  if (!emitter_) {
    if (log_) log_->flush();
    return;
  }
  const auto state = status == protocol::FinishStatus::kFailed ? protocol::RunState::kFailed
                                                               : protocol::RunState::kFinished;
  emit(protocol::RunFinishedEvent{status, step_, lastLoss_, secondsSince(started_)});
  emit(protocol::StateEvent{state, ""});
  emitter_->setState(state);
  (void)protocol::updateManifestState(dir_.root(), state, protocol::unixMillisNow());
  if (Status s = emitter_->close(); !s && log_) log_->error("telemetry: {}", s.message());
  if (log_) log_->flush();
}

}  // namespace fs::engine

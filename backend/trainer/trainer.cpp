// The training loop: epochs of iterations, control between iterations,
// checkpoints, telemetry, and a clean finish on every path.
#include "backend/trainer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "backend/protocol/wire/run_manifest.h"
#include "backend/trainer/data_ready_round.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The iterations of one accumulation window, summed until its optimizer step (or skip).
struct StepWindow {
  std::map<std::string, double> loss, localLoss;
  std::map<std::string, int64_t> samples;
  int iterations = 0;
  double dataS = 0, waitS = 0;
  Clock::time_point start = Clock::now();

  void add(const StepResult& r, double dataTime) {
    ++iterations;
    dataS += dataTime;
    for (const auto& [name, l] : r.loss) loss[name] += l;
    for (const auto& [name, l] : r.localLoss) localLoss[name] += l;
    waitS += r.waitS;
    for (const auto& [name, n] : r.samples) samples[name] += n;
  }
  // `last` (the window's closing iteration) with the window's mean losses, samples and waits.
  StepResult mean(StepResult last) {
    for (auto& [name, l] : last.loss) l = loss[name] / iterations;
    for (auto& [name, l] : last.localLoss) l = localLoss[name] / iterations;
    last.samples = samples;
    last.waitS = waitS;
    return last;
  }
  void clearSums() {
    loss.clear();
    localLoss.clear();
    samples.clear();
    iterations = 0;
    dataS = 0;
    waitS = 0;
  }
};

}  // namespace

protocol::StatusOr<TrainOutcome> runTraining(const protocol::RunConfig& config,
                                             const std::filesystem::path& runDir,
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
    checkpoint::TrainCounters& counters = state_.counters;
    // state_.source, not a reference to it: a rollback replaces it (NOTE [Loss-spike guard]).
    ControlLoop& control = *control_;
    emitStartEvents();
    emit(protocol::StateEvent{protocol::RunState::kRunning, ""});
    if (emitter_) {
      emitter_->setProgress(counters.step, protocol::RunState::kRunning);
      (void)protocol::updateManifestState(dir_.root(), protocol::RunState::kRunning,
                                          protocol::unixMillisNow(), options_.writeEnv);
    }
    StepWindow window;
    const auto halted = [&] { return control.stop() || control.kill(); };
    const auto limitReached = [&] {
      return options_.maxIterations > 0 && counters.iteration >= options_.maxIterations;
    };
    while (counters.epoch < config_.optim.epochs && !halted() && !limitReached()) {
      if (counters.stepInEpoch == 0) state_.source->setEpoch(counters.epoch);
      while (!limitReached()) {
        if (halted()) break;  // agreed before the last iteration
        checkTelemetry();
        // With several ranks the request is agreed in awaitData's data-ready round (NOTE [Waiting for data]).
        if (!place_.distributed()) {
          if (Status s = control.handle(); !s) return s;
        }
        if (Status s = holdWhilePaused(control); !s) return s;
        if (halted()) break;
        if (faults_.skipIteration == counters.iteration && !skipDone_) {  // NOTE [Fault injection]
          skipDone_ = true;
          int64_t skipped = 0;
          if (Status s = skipBatches(faults_.skipCount, &skipped); !s) throw std::runtime_error(s.message());
          log_->info("FS_SKIP_BATCHES: skipped {} batches at iteration {}", skipped, faults_.skipIteration);
        }
        const auto t0 = Clock::now();
        if (Status s = awaitData(*state_.source, control); !s) return s;
        if (halted()) break;  // stopped while waiting: the stop path below checkpoints
        auto next = state_.source->next();
        if (!next) throw std::runtime_error("data: " + next.status().message());
        if (!next.value()) break;  // end of epoch: every rank gets here at the same iteration
        const double dataTime = secondsSince(t0);
        auto result = trainIteration(*next.value());
        if (!result) throw std::runtime_error(result.status().message());
        ++counters.stepInEpoch;
        ++counters.iteration;
        window.add(result.value(), dataTime);
        if (options_.onIteration) options_.onIteration(counters.iteration, result->loss);
        if (result->optimizerStepped || result->skipped) {
          const StepResult mean = window.mean(result.value());
          lastLoss_ = mean.loss;
          if (emitter_) emitter_->setStep(counters.step);
          reporter_->reportStep(mean, secondsSince(window.start), window.dataS);
          window.clearSums();
          reporter_->heartbeatIfDue(control.paused());
          window.start = Clock::now();
          if (result->optimizerStepped && guard_.enabled()) {
            auto rolledBack = guardStep(mean.loss);
            if (!rolledBack) throw std::runtime_error(rolledBack.status().message());
            if (rolledBack.value()) {
              window.start = Clock::now();
              continue;  // the spike's step is abandoned: no validation, no checkpoint of it
            }
          }
          if (result->optimizerStepped && valSource_ && counters.step % config_.data.val_every_steps == 0) {
            if (Status s = runValidation(); !s) throw std::runtime_error(s.message());
          }
          if (result->optimizerStepped && config_.checkpoint.every_steps > 0 &&
              counters.step % config_.checkpoint.every_steps == 0) {
            if (Status s = checkpointer_->save(protocol::CheckpointKind::kStep); !s) {
              throw std::runtime_error(s.message());
            }
            noteStepCheckpoint();
          }
        }
      }
      if (halted() || limitReached()) break;
      ++counters.epoch;
      counters.stepInEpoch = 0;
      state_.source->setEpoch(counters.epoch);
      if (Status s = checkpointer_->save(protocol::CheckpointKind::kEpoch); !s)
        throw std::runtime_error(s.message());
    }
    reporter_->flush();
    if (control.kill()) {
      finish(protocol::FinishStatus::kStopped);
      return TrainOutcome::kKilled;
    }
    if (control.stop()) {
      if (control.checkpointOnStop()) {
        if (Status s = checkpointer_->save(protocol::CheckpointKind::kStep); !s)
          throw std::runtime_error(s.message());
      }
      finish(protocol::FinishStatus::kStopped);
      return TrainOutcome::kStopped;
    }
    if (options_.onFinished) {
      if (Status s = options_.onFinished(*state_.model); !s) throw std::runtime_error(s.message());
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

// NOTE [Waiting for data]: the step asks the source for its batches only
// once they are ready; until then it waits in slices (0.2 s) and between
// them keeps the run answering: heartbeats, and control requests. A stop
// ends the wait and takes the loop's stop path (a step checkpoint of the
// last completed iteration, then exit); a pause holds the run (the data may
// arrive meanwhile; nothing trains until resume); a checkpoint is written
// and the wait goes on. No batch of the waiting iteration has been taken,
// so the checkpoint's data position is exact.
//
// With several ranks a rank must not act alone, and a peer whose data is
// ready must not enter the iteration's collectives while another still
// waits. So before every iteration all ranks meet in a data-ready round
// (data_ready_round.h): one max-all-reduce of [not ready, failed, the polled
// control request]. A rank whose data is ready joins at once, a waiting one
// after one slice. Every rank then does the same thing: act on an agreed
// request (a pause enters the pause loop, whose own agreement runs every
// 0.2 s, and rounds go on after resume) and hold another round; take the
// batches when every rank is ready and nothing was asked; or fail. While
// they wait, the last step's per-rank figures are gathered at once (NOTE
// [Per-rank figures] in rank_reporter.cpp), so its step event does not wait
// for the data either. This
// round is the only place a request is agreed while running, so none is
// acted on twice (the iteration's agreements carry none) and none is lost
// (pending() is cleared only by act()). Its cost is one small blocking
// all-reduce per iteration. A source that stalls (NOTE [Data stall] in
// shard_worker.h) joins the round as failed; its message, naming dataset,
// shard and command, is broadcast, and every rank fails with it within a
// slice instead of waiting out the collective timeout.
Status Trainer::awaitData(data::DataSource& source, ControlLoop& control) {
  constexpr std::chrono::milliseconds kSlice{200};
  if (place_.distributed()) {
    for (;;) {
      DataReadiness mine;
      auto ready = source.waitReady(kSlice);
      if (!ready) {
        mine.failure = "data: " + ready.status().message();
      } else {
        mine.ready = ready.value();
      }
      control.poll();
      mine.control = control.pending();
      const DataRound round = agreeDataReady(*groups_.host, mine);
      if (round.failedRank >= 0) throw std::runtime_error(round.failure);
      if (round.control.any()) {
        if (Status s = control.act(round.control); !s) return s;
        if (control.stop() || control.kill()) return Status::ok();
        if (Status s = holdWhilePaused(control); !s) return s;
        if (control.stop() || control.kill()) return Status::ok();
        continue;  // a fresh round: new requests, and the data may have come
      }
      if (round.allReady) return Status::ok();
      reporter_->flush();  // the last step's event goes out now, not once the data came (a no-op after)
      reporter_->heartbeatIfDue(false);
    }
  }
  for (;;) {
    if (!control.paused()) {
      auto ready = source.waitReady(kSlice);
      if (!ready) throw std::runtime_error("data: " + ready.status().message());
      if (ready.value()) return Status::ok();
    } else {
      std::this_thread::sleep_for(kSlice);
    }
    reporter_->heartbeatIfDue(control.paused());
    if (Status s = control.handle(); !s) return s;
    if (control.stop() || control.kill()) return Status::ok();
  }
}

// While paused: a heartbeat and the control agreement (with several ranks one small all-reduce) every 0.2 s.
Status Trainer::holdWhilePaused(ControlLoop& control) {
  while (control.paused() && !control.stop() && !control.kill()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reporter_->heartbeatIfDue(true);
    checkTelemetry();
    if (Status s = control.handle(); !s) return s;
  }
  return Status::ok();
}

void Trainer::emit(protocol::EventBody body) {
  if (emitter_) emitter_->emit(std::move(body));
}

void Trainer::finish(protocol::FinishStatus status) {
  if (place_.distributed() && status != protocol::FinishStatus::kFailed) {
    // Rank 0 serves the store: nobody leaves while a peer may still need it.
    try {
      groups_.host->barrier("finish");
    } catch (const std::exception& e) {
      if (log_) log_->error("{}", e.what());
    }
  }
  if (!emitter_) {
    if (log_) log_->flush();
    return;
  }
  const auto state =
      status == protocol::FinishStatus::kFailed ? protocol::RunState::kFailed : protocol::RunState::kFinished;
  emit(protocol::RunFinishedEvent{status, state_.counters.step, lastLoss_, secondsSince(started_)});
  emit(protocol::StateEvent{state, ""});
  emitter_->setState(state);
  (void)protocol::updateManifestState(dir_.root(), state, protocol::unixMillisNow(), options_.writeEnv);
  if (Status s = emitter_->close(); !s && log_) log_->error("telemetry: {}", s.message());
  if (log_) log_->flush();
}

// NOTE [Telemetry that cannot be written]: when appends to events.jsonl have
// failed for a while (NOTE [A write failure that lasts] in
// backend/telemetry/emitter.h; a full disk, say) the run stops with that
// error, naming the file: the catch in run() logs it to the rank log and
// stderr, queues the error event and finishes as failed. Checked between
// iterations and while paused, so a run notices within one step. It takes
// no stop checkpoint: on the disk that holds events.jsonl it would most
// likely fail too, and the newest checkpoint stays what it is (a failed
// write never replaces one: docs/reliability.md). The error event and
// run.json's state reach the disk only if there is room for them by then.
// Only rank 0 writes telemetry: with several ranks its peers learn of the
// stop from their next collective, as for any failed rank.
void Trainer::checkTelemetry() {
  if (!emitter_) return;
  if (Status s = emitter_->writeFailure(); !s) throw std::runtime_error("telemetry: " + s.message());
}

}  // namespace fs::trainer

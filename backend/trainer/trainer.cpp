// The training loop: epochs of iterations, control between iterations,
// checkpoints, telemetry, and a clean finish on every path.
#include "backend/trainer/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "backend/protocol/wire/run_manifest.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::engine {

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
    TrainCounters& counters = state_.counters;
    data::DataSource& source = *state_.source;
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
      if (counters.stepInEpoch == 0) source.setEpoch(counters.epoch);
      while (!limitReached()) {
        if (halted()) break;  // agreed in the last iteration
        checkTelemetry();
        // NOTE [Distributed step]: with several ranks the request rides on the iteration's opening agreement.
        if (place_.distributed()) {
          control.poll();
        } else if (Status s = control.handle(); !s) {
          return s;
        }
        while (control.paused() && !halted()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          reporter_->heartbeatIfDue(control.paused());
          checkTelemetry();
          if (Status s = control.handle(); !s) return s;
        }
        if (halted()) break;
        const auto t0 = Clock::now();
        if (Status s = awaitData(source, control); !s) return s;
        if (halted()) break;  // stopped while waiting: the stop path below checkpoints
        auto next = source.next();
        if (!next) throw std::runtime_error("data: " + next.status().message());
        if (!next.value()) {  // end of epoch: every rank gets here at the same iteration
          if (place_.distributed()) {
            if (Status s = control.handle(); !s) return s;
          }
          break;
        }
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
          if (result->optimizerStepped && valSource_ && counters.step % config_.data.val_every_steps == 0) {
            if (Status s = runValidation(); !s) throw std::runtime_error(s.message());
          }
          if (result->optimizerStepped && config_.checkpoint.every_steps > 0 &&
              counters.step % config_.checkpoint.every_steps == 0) {
            if (Status s = checkpointer_->save(protocol::CheckpointKind::kStep); !s) {
              throw std::runtime_error(s.message());
            }
          }
        }
        if (place_.distributed()) {
          if (Status s = control.act(result->control); !s) return s;
        }
      }
      if (halted() || limitReached()) break;
      ++counters.epoch;
      counters.stepInEpoch = 0;
      source.setEpoch(counters.epoch);
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
// once they are ready; until then it waits in slices and between them keeps
// the run answering: heartbeats, and control requests. On one rank a request
// is acted on at once: a stop ends the wait and takes the loop's stop path
// (a step checkpoint of the last completed iteration, then exit), a pause
// holds the wait (the data may arrive meanwhile; nothing trains until
// resume), a checkpoint is written. With several ranks a request cannot be
// agreed while peers may already sit in the iteration's opening agreement,
// so it is polled into pending() and rides on that agreement once the data
// arrived; the stall timeout (NOTE [Data stall] in shard_worker.h) bounds
// that wait. A stalled source throws: the run fails naming dataset, shard
// and command.
Status Trainer::awaitData(data::DataSource& source, ControlLoop& control) {
  constexpr std::chrono::milliseconds kSlice{200};
  for (;;) {
    if (!control.paused()) {
      auto ready = source.waitReady(kSlice);
      if (!ready) throw std::runtime_error("data: " + ready.status().message());
      if (ready.value()) return Status::ok();
    } else {
      std::this_thread::sleep_for(kSlice);
    }
    reporter_->heartbeatIfDue(control.paused());
    if (place_.distributed()) {
      control.poll();
      continue;
    }
    if (Status s = control.handle(); !s) return s;
    if (control.stop() || control.kill()) return Status::ok();
  }
}

void Trainer::emit(protocol::EventBody body) {
  if (emitter_) emitter_->emit(std::move(body));
}

void Trainer::finish(protocol::FinishStatus status) {
  if (place_.distributed() && status != protocol::FinishStatus::kFailed) {
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

}  // namespace fs::engine

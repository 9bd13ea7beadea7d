// Control between iterations. The request waits in pending() until the
// ranks agree on it: between iterations on one rank and while paused,
// otherwise in the data-ready round before the next iteration (NOTE
// [Waiting for data] in trainer.cpp). Rank 0 acknowledges each command
// after the action.
#include "backend/trainer/control_loop.h"

#include <torch/torch.h>

#include "backend/protocol/wire/run_manifest.h"
#include "backend/telemetry/stop_signals.h"
#include "backend/trainer/rank_reporter.h"

namespace fs::trainer {

using protocol::Status;

ControlLoop::ControlLoop(int64_t rank, std::shared_ptr<distributed::Communicator> comm, bool distributed,
                         std::filesystem::path runRoot, telemetry::ControlInbox* inbox,
                         telemetry::TelemetryEmitter* events, const checkpoint::TrainCounters& counters,
                         checkpoint::Checkpointer& checkpointer, RankReporter& reporter,
                         std::shared_ptr<spdlog::logger> log)
    : rank_(rank),
      comm_(std::move(comm)),
      distributed_(distributed),
      runRoot_(std::move(runRoot)),
      inbox_(inbox),
      events_(events),
      counters_(counters),
      checkpointer_(checkpointer),
      reporter_(reporter),
      log_(std::move(log)) {}

// Rank 0 reads the control files, every rank its own signals.
void ControlLoop::poll() {
  ControlRequest want;
  if (telemetry::killRequested()) want.kill = 1;
  if (telemetry::stopRequested()) want.stop = 1;
  std::vector<protocol::ControlCommand> fresh;
  if (inbox_) {
    auto polled = inbox_->poll(counters_.step);
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
      case ControlVerb::kKill:
        want.kill = 1;
        break;
      case ControlVerb::kPause:
        want.pause = 1, want.resume = 0;
        break;
      case ControlVerb::kResume:
        want.resume = 1, want.pause = 0;
        break;
      case ControlVerb::kCheckpoint:
        want.checkpoint = 1;
        break;
    }
    commands_.push_back(c);
  }
  pending_.merge(want);
}

Status ControlLoop::handle() {
  poll();
  return act(agree(pending_));
}

ControlRequest ControlLoop::agree(ControlRequest mine) {
  if (!distributed_) return mine;
  const auto flags = mine.flags();
  torch::Tensor t = torch::tensor(std::vector<int64_t>(flags.begin(), flags.end()), torch::kInt64);
  comm_->allReduce(t, distributed::ReduceOp::kMax, "control");
  return ControlRequest::fromFlags(t.data_ptr<int64_t>());
}

void ControlLoop::enter(protocol::RunState state) {
  if (events_) {
    events_->emit(protocol::StateEvent{state, "control"});
    events_->setState(state);
  }
  if (rank_ == 0) (void)protocol::updateManifestState(runRoot_, state, protocol::unixMillisNow());
}

Status ControlLoop::act(const ControlRequest& agreed) {
  pending_ = ControlRequest{};
  const std::vector<protocol::ControlCommand> commands = std::move(commands_);
  commands_.clear();
  using protocol::ControlVerb;
  if (agreed.kill) kill_ = true;
  if (agreed.stop) {
    stop_ = true;
    stopCheckpoint_ = agreed.noCheckpoint == 0;
  }
  const bool wasPaused = paused_;
  if (agreed.pause && !paused_) {
    reporter_.flush();  // no iteration will carry it while paused
    paused_ = true;
    enter(protocol::RunState::kPaused);
  } else if (agreed.resume && paused_) {
    paused_ = false;
    enter(protocol::RunState::kRunning);
  }
  Status checkpointed = Status::ok();
  if (agreed.checkpoint) checkpointed = checkpointer_.save(protocol::CheckpointKind::kStep);
  const int64_t step = counters_.step;
  for (const auto& c : commands) {
    std::string message;
    bool ok = true;
    switch (c.verb) {
      case ControlVerb::kStop:
        message = stopCheckpoint_ ? "stopping: checkpoint, then exit"
                                  : "stopping without a checkpoint (args.checkpoint=false)";
        break;
      case ControlVerb::kKill:
        message = "stopping now without a checkpoint";
        break;
      case ControlVerb::kPause:
        message = paused_ ? "paused after step " + std::to_string(step) : "resumed again";
        break;
      case ControlVerb::kResume:
        message = wasPaused ? "resumed" : "was not paused";
        break;
      case ControlVerb::kCheckpoint:
        ok = checkpointed.isOk();
        message = ok ? "checkpoint written" : checkpointed.message();
        break;
    }
    log_->info("control {} {}: {}", c.seq, std::string(protocol::toString(c.verb)), message);
    inbox_->ack(c, ok, message, step);
  }
  return Status::ok();
}

}  // namespace fs::trainer

// Control between iterations: stop, kill, pause, resume and checkpoint
// requests from SIGTERM / SIGINT (every rank) and rank 0's control files,
// agreed across ranks (with several ranks in the data-ready round before
// each iteration, NOTE [Waiting for data] in trainer.cpp, or by handle()
// while paused) and acted on together: pause and resume (state event,
// run.json), a step checkpoint, and rank 0 acknowledges each command after
// the action.
//
// Ownership: the Trainer owns it. Inbox and emitter (rank 0's, null
// elsewhere), communicator, counters, checkpointer and reporter outlive it.
// Thread-safety: the rank's training thread.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "backend/checkpoint/checkpointer.h"
#include "backend/distributed/communicator.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/control_file.h"
#include "backend/telemetry/control_inbox.h"
#include "backend/telemetry/emitter.h"
#include "backend/trainer/control_request.h"

namespace fs::trainer {

class RankReporter;  // rank_reporter.h

class ControlLoop {
 public:
  // `comm`: the host group (NOTE [Host and device groups] in distributed/groups.h); the request travels as
  // host flags.
  ControlLoop(int64_t rank, std::shared_ptr<distributed::Communicator> comm, bool distributed,
              std::filesystem::path runRoot, telemetry::ControlInbox* inbox,
              telemetry::TelemetryEmitter* events, const checkpoint::TrainCounters& counters,
              checkpoint::Checkpointer& checkpointer, RankReporter& reporter,
              std::shared_ptr<spdlog::logger> log);

  // Signals and (rank 0) new control files into the pending request.
  void poll();
  // The polled request not yet acted on: with several ranks it rides on the next data-ready round.
  const ControlRequest& pending() const { return pending_; }
  // Acts on a request every rank agreed on (the same on every rank); clears pending().
  protocol::Status act(const ControlRequest& agreed);
  // Poll, agree now (a collective with several ranks), act.
  protocol::Status handle();

  bool stop() const { return stop_; }
  bool kill() const { return kill_; }
  bool paused() const { return paused_; }
  bool checkpointOnStop() const { return stopCheckpoint_; }  // a stop command may say args.checkpoint=false

 private:
  ControlRequest agree(ControlRequest mine);  // max over ranks
  void enter(protocol::RunState state);       // pause or resume: state event, emitter, run.json

  int64_t rank_;
  std::shared_ptr<distributed::Communicator> comm_;
  bool distributed_;
  std::filesystem::path runRoot_;
  telemetry::ControlInbox* inbox_;       // null: not rank 0
  telemetry::TelemetryEmitter* events_;  // null: not rank 0
  const checkpoint::TrainCounters& counters_;
  checkpoint::Checkpointer& checkpointer_;
  RankReporter& reporter_;
  std::shared_ptr<spdlog::logger> log_;

  ControlRequest pending_;                          // polled, not yet acted on
  std::vector<protocol::ControlCommand> commands_;  // rank 0: read, not yet acknowledged
  bool stop_ = false, kill_ = false, paused_ = false;
  bool stopCheckpoint_ = true;
};

}  // namespace fs::trainer

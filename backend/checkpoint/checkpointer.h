// The run's checkpoints. At start-up: the pretrained weights, then the
// resume (checkpoint.resume_from, else the newest complete checkpoint in the
// run directory; our own or OpenFlamingo's). During the run: step and epoch
// checkpoints of the TrainerState, the full OpenFlamingo-format file or,
// under FSDP with checkpoint.format: sharded, each rank's shards; then
// pruning and the checkpoint event.
//
// Ownership: the Trainer owns the Checkpointer and the TrainerState it
// saves and loads into; config, run directory, tokens, communicator, log and
// emitter (rank 0's, null elsewhere) outlive it.
// Thread-safety: the rank's training thread. save() is a collective with
// several ranks (every rank calls it at the same step).
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/trainer_state.h"
#include "backend/checkpoint/weights.h"
#include "backend/data/special_tokens.h"
#include "backend/distributed/communicator.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/telemetry/emitter.h"

namespace fs::checkpoint {

struct CheckpointerOptions {
  int64_t rank = 0;
  int64_t world = 1;
  // Delayed init on a rank that built shapes only (NOTE [Values from the node's first rank]): its values come
  // from its node's first rank, so neither pretrained weights nor a checkpoint's model state load here.
  bool shapesOnly = false;
  // Of the world this run has: an OpenFlamingo resume continues the schedule at the next epoch.
  int64_t optimizerStepsPerEpoch = 0;
  int64_t schedulerSteps = 0;
  // Where checkpoint writes, prunes and start-up recovery go (NOTE [One seam for file writes] in
  // protocol/io/write_env.h); null: the real file system. Must outlive the Checkpointer.
  protocol::WriteEnv* writeEnv = nullptr;
};

// What resume() found.
enum class Resumed {
  kNo,            // a fresh start
  kCheckpoint,    // one of ours: the exact state, data position and RNG included
  kOpenFlamingo,  // OpenFlamingo's: weights (and optimizer / schedule when readable), from the next epoch on
};

class Checkpointer {
 public:
  Checkpointer(const protocol::RunConfig& config, const protocol::RunDir& dir,
               const data::SpecialTokenIds& tokens, TrainerState& state,
               std::shared_ptr<distributed::Communicator> comm, std::shared_ptr<spdlog::logger> log,
               telemetry::TelemetryEmitter* events, CheckpointerOptions options);

  // model.lm.path and model.vision.pretrained into the built model, when set.
  protocol::Status importPretrained();

  // REQUIRES: the state holds the built (frozen, unsharded) model, optimizer,
  // schedule and source. Sets the counters; a skipped candidate is a warning.
  // First rank 0 puts right what an interrupted checkpoint write left
  // (checkpoint_recovery.h), each action a `checkpoint_recovered` warning;
  // with several ranks a collective (every rank calls it).
  protocol::StatusOr<Resumed> resume();

  // Writes the checkpoint of `kind` at the current counters (an epoch
  // checkpoint after the epoch was counted), prunes older ones and emits
  // the checkpoint event. An error (naming the path) leaves the newest
  // complete checkpoint in place.
  protocol::Status save(protocol::CheckpointKind kind);

  // The loss-spike guard (NOTE [Loss-spike guard] in backend/trainer/loss_spike_guard.h).
  // With window w > 0, pruning keeps, besides the newest keep_last, the newest step checkpoint at or
  // before step - w and every newer one (all while none is that old; a rollback may need them); it
  // names those it kept so (a `guard_keeps_checkpoints` warning the first time, the log after).
  void setGuardWindow(int64_t window) { guardWindow_ = window; }
  // The newest complete step checkpoint at a step <= `atOrBefore`, with its step; nullopt if none.
  std::optional<std::pair<std::filesystem::path, int64_t>> stepCheckpointAtOrBefore(int64_t atOrBefore) const;
  // Loads `path` (one of ours) into the state as resume() does; the state's source must be a fresh
  // one. Every rank calls it.
  protocol::Status rollBackTo(const std::filesystem::path& path);
  // Removes what a rollback abandoned: step checkpoints after `step`, epoch checkpoints of epochs
  // >= `epoch`. Rank 0 removes; a collective with several ranks.
  protocol::Status removeAbandoned(int64_t step, int64_t epoch);

 private:
  // checkpointer_resume.cpp
  protocol::Status resumeFrom(const CheckpointContents& ck, const std::filesystem::path& path);
  protocol::Status resumeFromOpenFlamingo(const ForeignCheckpoint& foreign,
                                          const std::filesystem::path& path);
  protocol::Status checkResumeLoad(model::LoadReport report, const std::string& where) const;
  protocol::Status restoreDataPosition(data::DataPosition position);
  // checkpointer.cpp
  ResumeState resumeState(protocol::CheckpointKind kind) const;  // without the manifest
  protocol::Status prune(protocol::CheckpointKind kind, int64_t epoch);
  protocol::Status recoverLeftovers();                             // checkpointer_resume.cpp
  void warn(const std::string& code, const std::string& message);  // log and warning event

  const protocol::RunConfig& config_;
  const protocol::RunDir& dir_;
  const data::SpecialTokenIds& tokens_;
  TrainerState& state_;
  std::shared_ptr<distributed::Communicator> comm_;
  std::shared_ptr<spdlog::logger> log_;
  telemetry::TelemetryEmitter* events_;  // null: not rank 0
  CheckpointerOptions options_;
  int64_t guardWindow_ = 0;
  bool guardKeptWarned_ = false;
};

}  // namespace fs::checkpoint

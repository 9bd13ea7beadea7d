// Internal: the Trainer, the loop that wires the run's parts together. It
// owns the run directory's telemetry, the TrainerState and the parts
// around it: the Checkpointer (checkpoints, resume, pretrained weights),
// the RankReporter (step, memory, heartbeat, slow-rank events) and the
// ControlLoop (stop, pause, resume, checkpoint, kill). It keeps the step
// itself (trainer_step.cpp), set-up (trainer_setup.cpp), the distributed
// side (trainer_dist.cpp: NOTE [Distributed step]), FSDP (trainer_fsdp.cpp:
// NOTE [FSDP in the engine]) and validation (trainer_validation.cpp).
//
// Thread-safety: one Trainer per process; run() blocks until the run ends.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "backend/checkpoint/checkpointer.h"
#include "backend/checkpoint/trainer_state.h"
#include "backend/data/data_source.h"
#include "backend/data/special_tokens.h"
#include "backend/distributed/communicator.h"
#include "backend/distributed/gradient_sync.h"
#include "backend/distributed/groups.h"
#include "backend/distributed/rendezvous.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/derived.h"
#include "backend/protocol/io/fault_write_env.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/step/loss.h"
#include "backend/step/precision.h"
#include "backend/step/seeding.h"
#include "backend/step/step_plan.h"
#include "backend/telemetry/control_inbox.h"
#include "backend/telemetry/emitter.h"
#include "backend/trainer/control_loop.h"
#include "backend/trainer/fault_injection.h"
#include "backend/trainer/loss_spike_guard.h"
#include "backend/trainer/rank_reporter.h"
#include "backend/trainer/step_result.h"
#include "backend/trainer/trainer.h"

namespace fs::trainer {

// Hex digest of the config as written to config.yaml (run_started, pre-flight).
std::string configHash(const protocol::RunConfig& config);

// This rank's place in the run and how the model is spread over the ranks.
struct Placement {
  int64_t rank = 0;
  int64_t world = 1;
  int ranksPerNode = 1;  // LOCAL_WORLD_SIZE within 1..world; ranks are laid out node by node
  bool fsdp = false;     // parallel.mode = fsdp (NOTE [FSDP in the engine])
  // NOTE [Values from the node's first rank] (fsdp/sharding_options.h): under delayed init only the first
  // rank of each node builds values; the others build shapes only (model/shapes_only.h).
  bool delayedInit = false;
  bool shapesOnly = false;
  bool distributed() const { return world > 1; }
};
Placement placementOf(const protocol::RunConfig& config, const TrainerOptions& options);

class Trainer {
 public:
  Trainer(const protocol::RunConfig& config, std::filesystem::path runDir, const TrainerOptions& options);
  protocol::StatusOr<TrainOutcome> run();

 private:
  // trainer.cpp
  // Until `source` has the next batches (with several ranks: every rank's), answering control
  // meanwhile (NOTE [Waiting for data]). Returns early when a stop or kill was agreed.
  protocol::Status awaitData(data::DataSource& source, ControlLoop& control);
  protocol::Status holdWhilePaused(ControlLoop& control);
  void finish(protocol::FinishStatus status);
  void emit(protocol::EventBody body);
  // Throws when events.jsonl has not been writable for a while (NOTE [Telemetry that cannot be written]).
  void checkTelemetry();

  // trainer_setup.cpp
  protocol::Status setUp();
  protocol::Status prepareRunDirectory();
  protocol::Status buildModelAndOptimizer();
  protocol::Status resume();
  void emitStartEvents();

  // trainer_step.cpp
  protocol::StatusOr<StepResult> trainIteration(const data::StepBatches& batches);
  // Forward and loss of one batch (labels, autocast, skipped padding); the
  // caller decides about gradients.
  step::LmLoss forwardLoss(const data::Batch& batch, const torch::Tensor& labels, bool compat);
  void optimizerStep(StepResult* result);
  void checkGradientFlow();

  // trainer_dist.cpp: NOTE [Distributed step]
  // The device group's backend for parallel.dist_backend on this rank's device; an error names the field.
  protocol::StatusOr<std::string> deviceBackend() const;
  protocol::Status joinWorld();
  protocol::Status agreeAfterSetUp();
  void synchronizeGradients(StepResult* r);

  // trainer_fsdp.cpp: NOTE [FSDP in the engine]
  protocol::Status shardModel();
  void finishShardedBackward(bool checkFlow);

  // trainer_validation.cpp
  protocol::Status runValidation();

  // trainer_guard.cpp: NOTE [Loss-spike guard] in loss_spike_guard.h
  // After an optimizer step with the step's losses: true when the run rolled back.
  protocol::StatusOr<bool> guardStep(const std::map<std::string, double>& losses);
  void noteStepCheckpoint();  // after a step checkpoint: this rank's RNG state for a rollback to it
  // Takes and drops up to `count` batches (not past the epoch's end), counting them as iterations.
  protocol::Status skipBatches(int64_t count, int64_t* skipped);

  protocol::RunConfig config_;
  protocol::RunDir dir_;
  TrainerOptions options_;
  Placement place_;
  protocol::DerivedFigures figures_;
  data::SpecialTokenIds tokens_;
  torch::Device device_{torch::kCPU};
  step::PrecisionPolicy precision_;

  std::unique_ptr<telemetry::TelemetryEmitter> emitter_;  // rank 0
  std::unique_ptr<telemetry::ControlInbox> inbox_;        // rank 0
  std::shared_ptr<spdlog::logger> log_;

  checkpoint::TrainerState state_;
  std::unique_ptr<data::DataSource> valSource_;  // null: no dataset has val_shards
  std::unique_ptr<step::StepPlan> plan_;

  std::unique_ptr<distributed::Membership> membership_;  // world > 1
  // NOTE [Host and device groups] (distributed/groups.h): every collective of the run goes to one of them, by
  // where its tensor lives. Solo with one rank; one Gloo group for both unless dist_backend is nccl.
  distributed::RankGroups groups_;
  std::unique_ptr<distributed::GradientSync> gradSync_;   // DDP with world > 1
  FaultPlan faults_;                                      // NOTE [Fault injection]
  std::unique_ptr<protocol::FaultWriteEnv> faultWrites_;  // FS_FAULT_WRITE_*: cuts checkpoint writes

  // The parts, made once the rank joined the world (setUp).
  std::unique_ptr<checkpoint::Checkpointer> checkpointer_;
  std::unique_ptr<RankReporter> reporter_;
  std::unique_ptr<ControlLoop> control_;

  LossSpikeGuard guard_;
  std::map<int64_t, step::RngSnapshot> rngAtCheckpoint_;  // by step: the checkpoints a rollback may use
  double lrFactor_ = 1;                                   // after a rollback, for lrFactorStepsLeft_ steps
  int64_t lrFactorStepsLeft_ = 0;
  bool skipDone_ = false;  // FS_SKIP_BATCHES

  bool gradientFlowChecked_ = false;  // NOTE [Gradient-flow check] in trainer_step.cpp
  bool structureChecked_ = false;
  std::map<std::string, double> lastLoss_;
  std::chrono::steady_clock::time_point started_;
  std::string runId_;
};

}  // namespace fs::trainer

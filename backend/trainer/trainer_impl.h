// Internal: the Trainer's state, shared by trainer_setup.cpp (build, resume),
// trainer_step.cpp (one step) and trainer.cpp (the loop and control).
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "backend/data/data_source.h"
#include "backend/data/special_tokens.h"
#include "backend/dist/communicator.h"
#include "backend/dist/gradient_sync.h"
#include "backend/dist/rendezvous.h"
#include "backend/checkpoint/checkpoint_io.h"
#include "backend/trainer/fault_injection.h"
#include "backend/trainer/iteration_agreement.h"
#include "backend/trainer/trainer.h"
#include "backend/checkpoint/weights.h"
#include "backend/fsdp/sharded_model.h"
#include "backend/fsdp/sharded_optim_state.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/derived.h"
#include "backend/protocol/run_dir.h"
#include "backend/telemetry/control_inbox.h"
#include "backend/telemetry/emitter.h"
#include "backend/train/loss.h"
#include "backend/train/optimizer.h"
#include "backend/train/precision.h"
#include "backend/train/schedule.h"
#include "backend/train/step_plan.h"

namespace fs::engine {

// Hex digest of the config as written to config.yaml (run_started, pre-flight).
std::string configHash(const protocol::RunConfig& config);
// torch's Python spelling ("float32"), as the telemetry schema documents.
std::string dtypeName(c10::ScalarType t);

// What one training iteration produced.
struct StepResult {
  std::map<std::string, double> loss;  // per dataset (the unscaled loss)
  std::map<std::string, int64_t> samples, tokens;
  std::map<std::string, double> localLoss;  // this rank's own (equal to loss with one rank)
  double waitS = 0;  // time spent waiting on other ranks (agreements, gradient reduction)
  bool skipped = false;
  std::string skipReason;
  std::optional<double> gradNorm;  // set when the optimizer stepped
  bool optimizerStepped = false;
  ControlRequest control;  // distributed: the request agreed in this iteration, acted on after it
};

class Trainer {
 public:
  Trainer(const protocol::RunConfig& config, std::filesystem::path runDir, const TrainerOptions& options);
  protocol::StatusOr<TrainOutcome> run();

 private:
  // trainer_setup.cpp
  protocol::Status setUp();
  protocol::Status prepareRunDirectory();
  protocol::Status buildModelAndOptimizer();
  protocol::Status resumeIfPossible();
  protocol::Status resumeFrom(const CheckpointContents& ck, const std::filesystem::path& path);
  protocol::Status resumeFromOpenFlamingo(const ForeignCheckpoint& foreign, const std::filesystem::path& path);
  protocol::Status checkResumeLoad(model::LoadReport report, const std::string& where) const;
  void emitStartEvents();

  // trainer_step.cpp
  protocol::StatusOr<StepResult> trainIteration(const data::StepBatches& batches);
  // Forward and loss of one batch (labels, autocast, skipped padding); the
  // caller decides about gradients. trainer_step.cpp.
  train::LmLoss forwardLoss(const data::Batch& batch, const torch::Tensor& labels, bool compat);
  void optimizerStep(StepResult* result);
  void checkGradientFlow();

  // trainer_dist.cpp: NOTE [Distributed step]
  bool distributed() const { return options_.world > 1; }
  protocol::Status joinWorld();
  protocol::Status agreeAfterSetUp();
  ControlRequest agreeOnControl(ControlRequest mine);
  void synchronizeGradients(StepResult* r);
  // NOTE [Per-rank figures] in trainer_dist.cpp.
  struct RankReport {
    int64_t step = 0;
    std::optional<protocol::StepEvent> event;  // written by rank 0 once every rank's figures arrived
    bool memory = false;                       // a memory event is due too
    std::vector<double> mine;
  };
  std::vector<double> rankFigures(const StepResult& r, double stepTime, double dataTime, bool memory) const;
  void completeRankReport(const std::vector<double>& all);
  void flushRankReport();
  void emitHeartbeatIfDue();
  protocol::Status restoreDataPosition(data::DataPosition position);
  void emit(protocol::EventBody body);

  // Ranks on each node (LOCAL_WORLD_SIZE), within 1..world; ranks are laid out node by node.
  int ranksPerNode() const { return static_cast<int>(std::clamp<int64_t>(options_.localWorld, 1, options_.world)); }
  // trainer_fsdp.cpp: NOTE [FSDP in the engine]
  bool fsdp() const { return config_.parallel.mode == "fsdp"; }
  // NOTE [Values from the node's first rank] (fsdp/sharded_model.h): under delayed init only the first
  // rank of each node builds values; the others build shapes only (model/shapes_only.h).
  bool delayedInit() const { return fsdp() && config_.parallel.delayed_init && distributed(); }
  bool shapesOnly() const { return delayedInit() && options_.rank % ranksPerNode() != 0; }
  protocol::Status shardModel();
  void finishShardedBackward(bool checkFlow);
  // tanh of every gate; a collective under FSDP (every rank calls it).
  std::vector<model::GateValues> gateValues();
  protocol::LayoutEvent shardedLayout() const;
  // Units the layout event lists (0 without FSDP): the per-rank figures carry one slot each for
  // the memory event's gathered_at_peak.
  int layoutUnitCount() const;
  // This rank's memory entry; under FSDP the parameter and gathered bytes
  // are the runtime's own (shards; gathered peak since the last entry).
  protocol::RankMemory rankMemory() const;

  // trainer.cpp
  // Control between iterations: poll (signals, rank 0's control files) into
  // the pending request, agree on it, act on the agreed one.
  void pollControl();
  protocol::Status actOnControl(const ControlRequest& agreed, bool* stop, bool* kill);
  protocol::Status handleControl(bool* stop, bool* kill);  // poll, agree now, act
  // trainer_checkpoint.cpp: full or sharded (checkpoint.format); a collective with several ranks.
  protocol::Status saveCheckpoint(protocol::CheckpointKind kind);
  ResumeState resumeState(protocol::CheckpointKind kind) const;  // without the manifest
  void emitStep(const StepResult& r, double stepTime, double dataTime);
  void emitMemory();
  void emitDataStats();
  protocol::Status makeShardSources();  // trainer_data.cpp
  protocol::Status runValidation();
  void finish(protocol::FinishStatus status);

  protocol::RunConfig config_;
  protocol::RunDir dir_;
  TrainerOptions options_;
  protocol::DerivedFigures figures_;
  data::SpecialTokenIds tokens_;
  torch::Device device_{torch::kCPU};
  train::PrecisionPolicy precision_;

  std::unique_ptr<telemetry::TelemetryEmitter> emitter_;
  std::unique_ptr<telemetry::ControlInbox> inbox_;
  std::shared_ptr<spdlog::logger> log_;

  model::Flamingo model_{nullptr};
  std::vector<train::NamedParameter> trainable_;
  std::unique_ptr<train::GroupedAdamW> optimizer_;
  std::unique_ptr<train::LrSchedule> schedule_;
  std::unique_ptr<data::DataSource> source_;
  std::unique_ptr<data::DataSource> valSource_;  // null: no dataset has val_shards
  std::unique_ptr<train::StepPlan> plan_;

  std::unique_ptr<dist::Membership> membership_;  // world > 1
  std::shared_ptr<dist::Communicator> comm_;      // solo with one rank
  std::unique_ptr<dist::GradientSync> gradSync_;  // DDP with world > 1
  std::shared_ptr<fsdp::ShardedModel> sharded_;   // FSDP
  std::vector<fsdp::ShardParameter> shards_;      // FSDP: what optimizer_ steps
  std::chrono::steady_clock::time_point lastHeartbeat_;
  std::set<int64_t> slowRanks_;
  FaultPlan faults_;  // NOTE [Fault injection]  // ranks warned about and not yet recovered

  int64_t epoch_ = 0;       // current epoch
  int64_t iteration_ = 0;   // iterations done over the run
  int64_t step_ = 0;        // optimizer steps done over the run
  int64_t stepInEpoch_ = 0; // iterations done in the current epoch
  bool paused_ = false;
  ControlRequest pendingControl_;                      // polled, not yet acted on
  std::vector<protocol::ControlCommand> pendingCommands_;  // rank 0: read, not yet acknowledged
  std::optional<RankReport> pendingReport_;               // distributed: the last step's, not yet gathered
  bool stopCheckpoint_ = true;  // a stop command may say args.checkpoint=false
  bool gradientFlowChecked_ = false;  // NOTE [Gradient-flow check] in trainer_step.cpp
  bool structureChecked_ = false;
  std::map<std::string, double> lastLoss_;
  int64_t lastDropped_ = 0;  // drops already reported in data_stats
  std::map<std::string, int64_t> samplesSeen_, tokensSeen_;  // cumulative, all ranks
  std::chrono::steady_clock::time_point started_;
  std::string runId_;
};

}  // namespace fs::engine

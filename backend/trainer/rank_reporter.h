// One rank's reports on the training loop: the step event (losses, lr,
// gates, throughput), the memory event, data_stats, the heartbeat, slow-rank
// warnings, the step's log line and TrainerOptions::onProgress. With
// several ranks each step's per-rank figures ride on the next iteration's
// opening agreement and rank 0 writes the events once they arrived (NOTE
// [Per-rank figures] in rank_reporter.cpp).
//
// Ownership: the Trainer owns it and the TrainerState it reads (it also
// resets the FSDP runtime's memory peaks it reports). Communicator,
// membership, log and emitter (rank 0's, null elsewhere) outlive it.
// Thread-safety: the rank's training thread.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/checkpoint/trainer_state.h"
#include "backend/distributed/communicator.h"
#include "backend/distributed/rendezvous.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/wire/events.h"
#include "backend/telemetry/emitter.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/trainer/progress.h"
#include "backend/trainer/step_result.h"

namespace fs::trainer {

struct RankReporterOptions {
  int64_t rank = 0;
  int64_t world = 1;
  int64_t totalSteps = 0;  // optimizer steps in the run (log line, Progress)
  std::function<void(const Progress&)> onProgress;
};

class RankReporter {
 public:
  // `membership`: null with one rank. `comm`: the host group (NOTE [Host and device groups] in
  // distributed/groups.h): the figures travel as host values.
  RankReporter(const protocol::RunConfig& config, checkpoint::TrainerState& state,
               std::shared_ptr<distributed::Communicator> comm, distributed::Membership* membership,
               std::shared_ptr<spdlog::logger> log, telemetry::TelemetryEmitter* events,
               RankReporterOptions options);

  // After an optimizer step or a skipped one: `window` holds the mean losses
  // and summed samples of the window's iterations. Reads the gates (a
  // collective under FSDP) when a step event is due: every rank calls it.
  void reportStep(const StepResult& window, double stepTime, double dataTime);

  // Distributed: this rank's figures of the last reported step, to ride on
  // the next opening agreement; null when none are pending.
  const std::vector<double>* pendingFigures() const { return pending_ ? &pending_->mine : nullptr; }
  // Every rank's pending figures, rank after rank: rank 0 writes the events.
  // No-op when none are pending.
  void completeReport(const std::vector<double>& all);
  // Gathers the pending figures now (a collective): before a pause and at the end of the run.
  void flush();

  // Rank 0 of a distributed run: a heartbeat event every telemetry.heartbeat_s.
  void heartbeatIfDue(bool paused);

  // Without FSDP, at an optimizer step while the gradients are held: notes the
  // bytes of the trainable parameters' .grad plus `bucketBytes` (DDP's
  // gradient buckets), the gradients of the next memory entry (NOTE
  // [Replicated model state] in rank_reporter.cpp).
  void noteGradients(int64_t bucketBytes);

  // After a resume at `iteration`: the cumulative sample counts continue from there.
  void countResumed(int64_t iteration);

 private:
  struct Pending {
    int64_t step = 0;
    std::optional<protocol::StepEvent> event;  // written by rank 0 once every rank's figures arrived
    bool memory = false;                       // a memory event is due too
    std::vector<double> mine;
  };
  std::vector<double> rankFigures(const StepResult& r, double stepTime, double dataTime, bool memory) const;
  // This rank's memory entry; model state as the run holds it: under FSDP the
  // runtime's shards (and gathered peak since the last entry), else the model's
  // parameters, the gradients noted since the last entry and AdamW's state.
  protocol::RankMemory rankMemory() const;
  void emitMemory();
  void emitDataStats();
  void emit(protocol::EventBody body);

  const protocol::RunConfig& config_;
  checkpoint::TrainerState& state_;
  std::shared_ptr<distributed::Communicator> comm_;
  distributed::Membership* membership_;
  std::shared_ptr<spdlog::logger> log_;
  telemetry::TelemetryEmitter* events_;
  RankReporterOptions options_;

  std::optional<Pending> pending_;                           // distributed: the last step's, not yet gathered
  std::map<std::string, int64_t> samplesSeen_, tokensSeen_;  // cumulative, all ranks
  int64_t lastDropped_ = 0;                                  // drops already reported in data_stats
  mutable int64_t gradientBytes_ = 0;  // largest noted since the last memory entry (not FSDP)
  bool setUpInStepPeak_ = true;        // no step ended yet: the step peak's interval holds the set-up
  std::set<int64_t> slowRanks_;        // warned about and not yet recovered (NOTE [Slow ranks])
  std::chrono::steady_clock::time_point lastHeartbeat_;
};

// The memory tracker's reader of `device` (runtime::readDeviceMemory / resetDevicePeaks), for
// telemetry::setDeviceMemoryReader; std::nullopt where there is nothing to read (CPU, a build
// without CUDA). NOTE [Device figures per rank] in rank_reporter.cpp.
std::optional<telemetry::DeviceMemoryReader> deviceMemoryReader(const torch::Device& device);

}  // namespace fs::trainer

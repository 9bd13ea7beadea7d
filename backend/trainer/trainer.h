// One rank's training run: builds the model, data source, optimizer and
// schedule from a RunConfig, resumes from the newest complete checkpoint in
// the run directory, trains with OpenFlamingo's step semantics, writes
// telemetry / logs / checkpoints into the run directory and obeys control
// commands (stop, kill, pause, resume, checkpoint) and SIGTERM / SIGINT.
//
// With world > 1 every rank runs one Trainer: rank 0 writes the run
// directory's events, manifest and checkpoints; every rank writes its own
// log; gradients are averaged across ranks by DDP, or reduce-scattered into
// shards under FSDP (parallel.mode; NOTE [Distributed step] in
// trainer_dist.cpp, NOTE [FSDP in the engine] in trainer_fsdp.cpp).
// LibTorch exceptions are caught here, turned into an `error` event and a
// failed Status: nothing escapes to the CLI.
//
// Thread-safety: one Trainer per process; run() blocks until the run ends.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"
#include "backend/trainer/progress.h"

namespace fs::data {
class DataSource;
}
namespace fs::distributed {
struct RankGroups;
}
namespace fs::model {
class FlamingoImpl;
}

namespace fs::trainer {

struct TrainerOptions {
  // This rank's place in the run (backend/launch/world_env.h discovers it).
  // world > 1: the ranks meet at masterAddr:masterPort (distributed/rendezvous.h).
  int64_t rank = 0;
  int64_t world = 1;
  int64_t localWorld = 1;  // ranks per node
  std::string masterAddr = "127.0.0.1";
  int64_t masterPort = 29500;
  std::string host;     // this host's name, for messages
  bool strict = false;  // a gradient-flow problem after the first step is an error, not a warning
  bool installSignalHandlers = true;
  bool logInfoToStderr = false;  // mirror the rank log's info lines to stderr (warnings always are)
  std::function<void(const Progress&)> onProgress;  // called on the training thread after each step

  // Hooks for tools that drive the same loop on other inputs (replay.h). All
  // optional; called on the training thread.
  // Per iteration (micro-step), each dataset's unscaled loss.
  std::function<void(int64_t iteration, const std::map<std::string, double>& loss)> onIteration;
  // Replaces the config's data source (data.source is then not consulted).
  std::function<protocol::StatusOr<std::unique_ptr<data::DataSource>>()> makeSource;
  // After the model is built, loaded and frozen, before resuming: e.g. load
  // an exact initial state. An error fails the set-up.
  std::function<protocol::Status(model::FlamingoImpl&)> initModel;
  // After the last iteration of a finished run, before run_finished.
  std::function<protocol::Status(model::FlamingoImpl&)> onFinished;
  // Where the run's files are written (NOTE [One seam for file writes] in
  // backend/protocol/io/write_env.h): run directory, run.json, telemetry,
  // control files. Null: the real file system. Must outlive the run.
  protocol::WriteEnv* writeEnv = nullptr;
  // Checkpoint writes, prunes and start-up recovery only (null: writeEnv), so a
  // test can count and cut the checkpoint sequence alone (fault_write_env.h).
  protocol::WriteEnv* checkpointWriteEnv = nullptr;
  int64_t maxIterations = 0;    // > 0: finish after this many iterations (no checkpoint)
  bool disableDropout = false;  // a stochastic mask cannot be replayed
  // Dynamic loss scaling whatever the precision (the fp16 precisions always scale). Tests use it to
  // run the scaled step on CPU, where fp16 cannot run (NOTE [Loss scaling in the step]).
  bool lossScaling = false;
  double initialLossScale = 65536.0;
  // Tests: the rank trains on this device instead of parallel.device's choice (NOTE [Device choice]), e.g.
  // a stand-in for a GPU that runs on the CPU (tests/backend/trainer/group_routing_test.cpp).
  std::optional<c10::Device> device;
  // Tests: called once with the rank's groups (NOTE [Host and device groups] in
  // backend/distributed/groups.h), after joining and before the run's first collective; may replace them (a
  // routing check wraps them).
  std::function<void(distributed::RankGroups&)> wrapGroups;
};

enum class TrainOutcome { kFinished, kStopped, kKilled };

// REQUIRES: validateConfig(config) has no errors.
protocol::StatusOr<TrainOutcome> runTraining(const protocol::RunConfig& config,
                                             const std::filesystem::path& runDir,
                                             const TrainerOptions& options);

}  // namespace fs::trainer

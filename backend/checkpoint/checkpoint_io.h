// Checkpoint files in OpenFlamingo's layout, readable by Python's torch.load:
//   {"epoch": int, "model_state_dict": {name: tensor}, "optimizer_state_dict":
//    {"state": {int: {...}}, "param_groups": [...]}, "lr_scheduler_state_dict": {...},
//    "flamingo_studio": {...}}
// The last key is ours (OpenFlamingo's loader reads only the first four): the
// run manifest, the global step, the data-stream position and RNG states, so
// a resumed run continues exactly where the checkpoint was taken.
//
// Writes are crash-safe: temp name, fsync, rename, fsync dir (run_dir.h).
// Thread-safety: free functions; the tensors must not change while writing.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/data_position.h"
#include "backend/model/state_dict.h"
#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/step/grad_scaler.h"
#include "backend/step/optimizer.h"
#include "backend/step/schedule.h"
#include "backend/step/seeding.h"

namespace fs::checkpoint {

struct ResumeState {
  int64_t step = 0;       // optimizer steps taken
  int64_t iteration = 0;  // training iterations (micro-steps) taken
  int64_t epoch = 0;      // epoch to continue in
  data::DataPosition data;
  step::RngSnapshot rng;
  std::string kind;                                 // "epoch" | "step" | "final"
  protocol::CheckpointManifest manifest;            // engine version, model shape, parameter names/shapes
  std::optional<step::GradScalerState> gradScaler;  // fp16 precisions: the loss scale
};

struct CheckpointContents {
  int64_t epoch = 0;  // OpenFlamingo's "epoch": the last finished epoch
  model::NamedTensors modelState;
  step::OptimizerStateDict optimizer;
  step::LrSchedulerStateDict scheduler;
  ResumeState resume;
};

// OpenFlamingo's filter: from the named parameters, keep those that require
// grad or whose name contains "embed" or "fsdp"; buffers except those under
// vision_encoder.
model::NamedTensors checkpointModelState(const model::NamedTensors& parameters,
                                         const model::NamedTensors& buffers);

// The resume state as its record (NOTE [Checkpoint records]), which both the
// file's "flamingo_studio" dict and a sharded index's "resume" carry; and
// back, refusing a snapshot of the wrong size.
protocol::ResumeRecord toResumeRecord(const ResumeState& state);
protocol::StatusOr<ResumeState> fromResumeRecord(const protocol::ResumeRecord& record);

// Through `env` (null: the real file system; protocol/io/write_env.h).
protocol::Status writeCheckpoint(const std::filesystem::path& path, const CheckpointContents& contents,
                                 protocol::WriteEnv* env = nullptr);

// Reads a checkpoint this engine wrote (the flamingo_studio key present): a
// file, or a sharded checkpoint's directory (checkpoint_sharded.h), which
// reads back as the file a single process would have written.
protocol::StatusOr<CheckpointContents> readCheckpoint(const std::filesystem::path& path);

// Checkpoints in `dir` newest first (by resume iteration). Only each file's
// small pickle is read (tensors stay on disk), so scanning costs little at
// start-up; torn or unreadable files are skipped and named in `skipped`, as
// are sharded directories without index.json or with a rank file missing.
std::vector<std::filesystem::path> checkpointCandidates(const std::filesystem::path& dir,
                                                        std::vector<std::string>* skipped);

// The first of checkpointCandidates(); nullopt when there is none.
std::optional<std::filesystem::path> newestCompleteCheckpoint(const std::filesystem::path& dir,
                                                              std::vector<std::string>* skipped);

}  // namespace fs::checkpoint

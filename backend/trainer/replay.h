// Replay: proves the engine matches a user's Python runs. A reference file
// (Python's torch.save of a dict) holds
//   "init":    {parameter name -> tensor}, OpenFlamingo's names (a "module."
//              prefix is accepted), every parameter of the model
//   "batches": [{"laion": (images, input_ids, attention_mask), "mmc4": (...)}, ...]
//              in OpenFlamingo's shapes: images (B, T_img, 1, 3, H, W) float,
//              ids / mask (B, L) integer
// runReplay loads `init` exactly, then runs one training iteration per
// element of `batches` through the normal training loop (same labels, loss,
// clipping, optimizer and schedule as `train`; dropout off, since a random
// mask cannot be replayed), reports each iteration's losses and writes the
// final trainable parameters as a torch.save-compatible {name: tensor} file.
//
// Datasets are matched by type: the config's LAION dataset takes the "laion"
// entries, its MMC4 dataset the "mmc4" ones; the config must not name two of
// one type. Thread-safety: runReplay blocks like runTraining.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/data/batch.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"
#include "backend/trainer/trainer.h"

namespace fs::trainer {

struct ReplayReference {
  std::map<std::string, torch::Tensor> init;
  // Per iteration, keyed by dataset type ("laion", "mmc4").
  std::vector<std::map<std::string, data::Batch>> batches;
};

// Errors name the file and the entry ("batches[3]['mmc4'][1]: ...").
protocol::StatusOr<ReplayReference> readReplayReference(const std::string& path);

struct ReplayOptions {
  std::filesystem::path out;  // final trainable parameters (torch.save-compatible)
  std::function<void(int64_t iteration, const std::map<std::string, double>& loss)> onIteration;
};

// REQUIRES: validateConfig(config) has no errors. The run directory must not
// hold a checkpoint (a replay never resumes).
protocol::Status runReplay(const protocol::RunConfig& config, const ReplayReference& reference,
                           const std::filesystem::path& runDir, const ReplayOptions& options);

}  // namespace fs::trainer

// One training step's input: a micro-batch of every configured dataset, in
// OpenFlamingo's tensor shapes.
//
//   images          (B, T_img, 1, 3, H, W) float32, CLIP-normalised; T_img = 1
//                   for LAION, max_num_images for MMC4 (zero images pad the
//                   documents that have fewer)
//   input_ids       (B, L) int64, right-padded with the pad id
//   attention_mask  (B, L) int64, 1 on real tokens, 0 on padding
//
// LAION pads to the longest sample in the batch (at most max_tokens); MMC4 to
// exactly max_tokens. The frame axis (the 1) is OpenFlamingo's F.
//
// Thread-safety: plain values; the tensors are shared handles, so a Batch
// copied between threads shares storage.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/shard_cursor.h"
#include "backend/protocol/status.h"

namespace fs::data {

enum class DatasetKind { kLaion, kMmc4 };

// "laion" | "mmc4"; anything else is nullopt.
std::optional<DatasetKind> datasetKindFromString(const std::string& type);
const char* toString(DatasetKind kind);

struct Batch {
  std::string dataset;  // the dataset's configured name
  DatasetKind kind = DatasetKind::kLaion;
  torch::Tensor images;         // (B, T_img, 1, 3, H, W) float32
  torch::Tensor inputIds;       // (B, L) int64
  torch::Tensor attentionMask;  // (B, L) int64
  int64_t samples = 0;          // B
  int64_t tokens = 0;           // non-pad tokens: attention_mask.sum()
  int64_t index = 0;            // batch index within the epoch for this dataset
  // The shard pipeline's reader position when the batch completed (NOTE
  // [Shard cursor] in shard_cursor.h); none from the synthetic source.
  std::optional<ShardCursor> cursor;
};

// One Batch per configured dataset, in config order.
struct StepBatches {
  int64_t epoch = 0;
  int64_t step = 0;  // index of this step within the epoch
  std::vector<Batch> batches;

  // nullptr when no dataset has that name.
  const Batch* find(const std::string& dataset) const;
};

// NOTE [Host to device copies]: batches are assembled on the host (the shard
// workers and the synthetic source fill CPU tensors) and stay there until the
// trainer's step: it takes every host-side decision from the host batch first
// (labels, their target count, whether padding is skipped, the model's index
// sets: token scans that would be host syncs on a GPU), then copies the batch and its labels to the
// rank's device with toDevice, the one place a batch crosses to the device.
// On a CUDA device each host tensor is pinned (page-locked; pin_memory copies
// it once on the host) and copied with non_blocking=true, so the copy is queued
// on the current stream and the forward's kernels follow it in stream order;
// the caching host allocator keeps the pinned buffer until the copy is done.
// On the CPU nothing is copied: the same tensor handles come back, no ATen op
// runs (step_budget_test counts them).
//
// `t` on `device`: `t` itself when it is undefined or already there.
torch::Tensor toDevice(const torch::Tensor& t, torch::Device device);
// `batch` with its three tensors on `device` (toDevice); the counts and cursor copied.
Batch toDevice(const Batch& batch, torch::Device device);

// Checks shapes, dtypes and the agreement of the three tensors, naming the
// dataset and the offending tensor. Used by sources in debug paths and tests.
protocol::Status checkBatch(const Batch& batch);

}  // namespace fs::data

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

// Checks shapes, dtypes and the agreement of the three tensors, naming the
// dataset and the offending tensor. Used by sources in debug paths and tests.
protocol::Status checkBatch(const Batch& batch);

}  // namespace fs::data

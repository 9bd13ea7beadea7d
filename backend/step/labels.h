// Label masks: which tokens of a batch are prediction targets.
//
// NOTE [Label rules]: exactly OpenFlamingo's (spec section 4, checked against
// the released train_utils.py). Labels start as a copy of input_ids; -100
// marks "not a target". The language model shifts them (position t predicts
// label t + 1), so label 0 is never used.
//   LAION: pad -> -100, <image> -> -100. Targets: the caption,
//          <|endofchunk|> and eos.
//   MMC4:  pad -> -100; every token before the first <image> -> -100; after
//          each <|endofchunk|>, every token up to (not including) the next
//          <image> -> -100; every <image> -> -100. So text after an image is
//          a target up to and including its <|endofchunk|>; the final
//          <|endofchunk|> is a target and the eos after it never is (nor is
//          anything after it). A document truncated before its final
//          <|endofchunk|> keeps its last text as targets.
// A sample with no target (e.g. a document whose only <image> is its last
// token) makes a batch of such samples a NaN loss in the reference; labelStats
// counts them so the trainer can report them.
//
// The rules are row scans over token ids: the trainer runs them on the host
// batch, before it goes to its device (NOTE [Host to device copies] in
// backend/data/batch.h), and copies the labels with it.
//
// Thread-safety: pure functions.
#pragma once

#include <torch/types.h>

#include "backend/data/batch.h"
#include "backend/data/special_tokens.h"

namespace fs::step {

inline constexpr int64_t kIgnoreIndex = -100;

// REQUIRES: inputIds (B, L) int64. The result has the same shape and device.
torch::Tensor laionLabels(const torch::Tensor& inputIds, const data::SpecialTokenIds& tokens);
torch::Tensor mmc4Labels(const torch::Tensor& inputIds, const data::SpecialTokenIds& tokens);
torch::Tensor makeLabels(data::DatasetKind kind, const torch::Tensor& inputIds,
                         const data::SpecialTokenIds& tokens);

struct LabelStats {
  int64_t samples = 0;
  int64_t targets = 0;                // labels[:, 1:] != -100: what the loss averages over
  int64_t samplesWithoutTargets = 0;  // rows whose labels[:, 1:] are all -100
};

// REQUIRES: labels (B, L).
LabelStats labelStats(const torch::Tensor& labels);

// LabelStats::targets of host labels in one pass over their memory, without
// an ATen op (the trainer counts every batch's targets before the batch goes
// to its device; LossOptions::targets).
// REQUIRES: labels (B, L) int64, on the CPU.
int64_t countTargets(const torch::Tensor& labels);

// The loss's targets in the order it averages them (NOTE [Logits at the
// targets] in backend/model/output_head.h): every (b, t) with t < L - 1 and
// labels[b, t + 1] != -100, as flat positions b * L + t of the logits that
// predict them, and those labels.
struct Targets {
  torch::Tensor positions;  // (P) int64, ascending
  torch::Tensor labels;     // (P) int64
};
// REQUIRES: labels (B, L) int64, on the CPU.
Targets targetsOf(const torch::Tensor& labels);

// NOTE [Dead positions]: position t of a row reaches the loss only through
// the logits at t and at later positions (attention is causal), and only
// the logits at t < the row's last target label are read. So every position
// from the row's last target label on computes nothing the loss sees: the
// eos of a LAION caption, the final <|endofchunk|> and eos of an MMC4
// document, and any padding. They may be skipped like padding (NOTE
// [Skipped padding] in backend/model/common.h). A row with no target keeps
// every position (a batch left empty would be a special case for nothing).
// Returns (B, L) bool, true at the dead positions.
// REQUIRES: labels (B, L) int64, on the CPU.
torch::Tensor deadPositions(const torch::Tensor& labels);

}  // namespace fs::step

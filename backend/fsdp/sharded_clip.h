// Gradient clipping over sharded gradients, both ways the issue asks for:
//  - global (default): the L2 norm of every trainable gradient of the
//    model, from each rank's shard sums of squares summed over the shard
//    group (replicas hold the same shards, so they are not summed again);
//    one coefficient for all, as torch.nn.utils.clip_grad_norm_ and as our
//    single-process and DDP runs clip;
//  - per unit (compat: the reference's FSDP, which clips each wrapped
//    trainable unit by its own norm): one coefficient per flat parameter
//    group of a unit, all norms from one all-reduce.
// Padding is zero and adds nothing. The formula is step::clipGradNorm's
// (coef = min(1, max_norm / (norm + 1e-6))); a non-finite norm leaves the
// gradients alone and is reported, so the caller skips the step on every
// rank (every rank sees the same reduced norm).
//
// Thread-safety: the rank's training thread; every rank of the shard group
// calls it at the same point.
#pragma once

#include <vector>

#include "backend/fsdp/sharded_model.h"
#include "backend/step/grad_clip.h"

namespace fs::fsdp {

enum class ClipScope { kGlobal, kPerUnit };

struct ShardedClipResult {
  step::ClipResult total;               // the global norm (measured in both scopes), coef for kGlobal
  std::vector<step::ClipResult> units;  // kPerUnit: per unit with trainable parameters, in unit order
};

ShardedClipResult clipShardedGradNorm(const ShardedModel& model, const step::ClipOptions& options,
                                      ClipScope scope = ClipScope::kGlobal);

}  // namespace fs::fsdp

// Per-rank memory of one strategy x layout: model state (exact bytes) plus
// the gathered peak and activations (estimates).
//
// NOTE [Memory model] (bytes per rank; shards are equal on every rank):
//   parameters  sum over flat groups of shardNumel x storage bytes.
//   gradients   ours: trainable groups only, shardNumel x weight bytes
//               (frozen groups never get gradient storage). Reference:
//               every group that gets gradients, which includes the
//               unfrozen decoder layers.
//   optimizer   AdamW: 2 x shardNumel x weight bytes per group the
//               optimizer steps (reference: per trainable flat parameter,
//               padding included; the unfrozen decoder layers are excluded
//               from its optimizer).
//   gathered    the largest set of units unsharded at once, in the param
//               dtype (a unit costs paddedNumel x param bytes; with one
//               rank per shard group and no cast it costs nothing). The
//               root unit stays gathered throughout. full_shard /
//               hybrid_shard: a window of k consecutive units in gather
//               order, k = limit_all_gathers, or when that is 0, 1 + 1 if
//               prefetching (forward_prefetch in forward, backward_prefetch
//               != none in backward); in backward the current unit's
//               unsharded gradient (padded x param bytes of its gradient
//               groups) is added until its reduce-scatter. shard_grad_op:
//               every unit that takes part in backward stays gathered from
//               its forward to its backward, so at the turn all of them are
//               gathered at once, plus one unit's unsharded gradient; with
//               gradient checkpointing only units outside checkpointed
//               regions are held (a unit run inside one built no graph and is
//               freed after its forward), the others take the full_shard
//               backward window beside the held ones. A unit
//               holding a tied head (Unit::aliases) is gathered again at the
//               head, and its unsharded gradient, begun there, lives through
//               the whole backward until the unit's own backward.
//   activations activation_estimate.h, the same model for ours and the
//               reference but for the head (ours computes the logits at the
//               targets only); `activations` follows model.gradient_checkpointing.
// peak = model state + the step's input batches + the step walk's largest
// moment (NOTE [Step walk] in step_walk.h): gathered units and activations
// are not summed at their own largest (activations peak at the end of a
// forward, the gathered window inside backward) but walked unit by unit
// through each micro-batch's forward and backward, with Gloo's all-gather
// staging buffer and the reduce-scatter in flight (its flat gradient and
// receive buffer) where they occur. `gatheredPeak` and `activations` stay
// each term's own largest, for the table's columns. Measured on CPU
// (bench/fsdp/peak_accuracy.sh, docs/benchmarks.md; docs/planner.md
// "Accuracy of the peak").
//
// NOTE [Replicated modes] (strategies single and ddp: parallel.mode ddp, which
// never builds flat groups): one unit-less copy of the model per rank, planned
// through the same code as no_shard with every parameter in the weight dtype
// (replicatedPrecisionOf; the engine does not cast the model it builds):
//   parameters  every parameter, frozen too, numel x weight bytes.
//   gradients   trainable parameters' .grad (numel x weight bytes); under ddp
//               at world > 1 twice that: distributed::GradientSync keeps flat buckets
//               of every trainable gradient for the all-reduce (NOTE [Gradient
//               buckets] in backend/distributed/gradient_sync.h). At world 1 the
//               engine makes no GradientSync, so ddp there equals single.
//   optimizer   AdamW: 2 x trainable numel x weight bytes.
//   gathered    0: nothing is gathered. The all-reduce is in place.
//   activations and the step walk as for no_shard (no gather windows, no
//               staging, no reduce-scatter in flight).
// The gradients are counted for the whole step, as FSDP's shards are, though
// the engine drops them after each optimizer step: the peak errs high by at
// most the gradient bytes. Measured in docs/planner.md "Accuracy of the peak".
// CPU offload is not modelled (parallel.cpu_offload moves parameters,
// gradients and optimizer state to host memory; the figures above are then
// host bytes).
//
// NOTE [Loader memory]: with the shard pipeline (data.source shards or
// generated) each of a dataset's `workers` threads (backend/data/
// shard_worker.h) keeps data.prefetch_batches finished batches queued, one
// more finished and waiting for room, and the image tensor of the batch it
// builds next (taken as soon as the last one is finished); it reuses an
// image tensor once the step has let go of it, so its pool also keeps the
// one the step holds or held. A worker whose batches arrive faster than the
// steps take them therefore holds prefetch + 3 image tensors and prefetch + 1
// batches' ids and masks; one image tensor and one ids/mask pair per dataset
// are the step's own (`inputs`). So
//   loader = sum over datasets of
//            images x (workers x (prefetch + 3) - 1) + ids_mask x workers x (prefetch + 1)
// A worker slower than the step holds fewer; at an epoch's end the queues
// empty and a finished worker frees its tensors. The synthetic source builds
// each batch in the step: loader 0. loader_memory_test holds the real
// pipeline's tracked bytes to this, byte for byte.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/fsdp_plan/activation_estimate.h"
#include "backend/fsdp_plan/layout.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/fsdp_plan/step_walk.h"
#include "backend/protocol/config/config_types.h"

namespace fs::fsdp_plan {

// Where one unit peaks in the step walk: the largest moment (over the
// datasets' micro-batches) while it is the unit being run, forward or
// backward. The root unit, gathered throughout, peaks at the step's peak.
struct UnitPeak {
  int64_t bytes = 0;  // gathered + activations then (as RankMemory::stepPeak)
  WalkPhase phase = WalkPhase::kForward;
  bool operator==(const UnitPeak&) const = default;
};

struct RankMemory {
  int64_t parameters = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t gatheredPeak = 0;
  int64_t activations = 0;  // per model.gradient_checkpointing
  int64_t activationsWithoutCheckpointing = 0;
  int64_t activationsWithCheckpointing = 0;
  int64_t inputs = 0;               // the step's batches, every dataset's, held for the whole step
  int64_t loader = 0;               // the data workers' other batches (NOTE [Loader memory])
  int64_t stepPeak = 0;             // gathered + activations at the step's highest moment (NOTE [Step walk])
  std::vector<UnitPeak> unitPeaks;  // parallel to Layout::units
  int stepPeakUnit = -1;            // Layout::units index of the step's highest moment; -1 at the head
  WalkPhase stepPeakPhase = WalkPhase::kForward;

  int64_t modelState() const { return parameters + gradients + optimizer; }
  int64_t peak() const { return modelState() + inputs + loader + stepPeak; }
};

// The data workers' batches beyond the step's own (NOTE [Loader memory]).
int64_t loaderBytes(const protocol::RunConfig& config, const ActivationEstimate& activations);

// Units gathered at once in forward / backward windows (NOTE [Memory model]).
int64_t forwardWindow(const protocol::ParallelConfig& parallel);
int64_t backwardWindow(const protocol::ParallelConfig& parallel);

// Full bytes of one unit while gathered, given the plan's shard group.
int64_t unitGatheredBytes(const UnitShards& unit, int64_t shard_size, const PrecisionPlan& precision);

RankMemory estimateRankMemory(const Layout& layout, const ShardPlan& shards, const PrecisionPlan& precision,
                              const protocol::RunConfig& config, const ActivationEstimate& activations);

}  // namespace fs::fsdp_plan

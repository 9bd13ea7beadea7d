// The fit's step-time model: one optimizer step of one rank on a cluster,
// from the model's FLOPs, the strategy's collectives and the cluster's
// figures (cluster.h). Used to rank choices (fit.h), not to promise seconds.
//
// NOTE [Step-time model] (per rank, per optimizer step; docs/planner.md "Fit to a cluster"):
//   FLOPs      per micro-batch and dataset, 2 x numel x tokens for each parameter in a
//              matmul (forward), tokens by region: vision tower T (P + 1) per sample,
//              Perceiver T n, the LM side (gated blocks, decoder layers, head) L; the
//              embedding lookup is free, a tied head counts once as the head. Plus the
//              decoder's attention scores, 4 L^2 d per layer. Backward: 2x the forward of
//              every module on the gradient path (input gradients) plus 2x for trainable
//              weights (weight gradients); the frozen vision tower runs under no-grad and
//              has no backward.
//   compute    FLOPs / (peak x efficiency); peak is peak_tflops_fp32 for fp32 compute,
//              peak_tflops_16 for bf16 / fp16 / amp_*.
//   recompute  with gradient checkpointing the checkpointed regions (Perceiver, gated
//              blocks, decoder layers) run their forward again in backward.
//   comm       bytes each rank sends, ring collectives: an all-gather or reduce-scatter
//              of B bytes over s ranks moves B (s - 1) / s, an all-reduce twice that.
//              Per micro-batch (FSDP syncs every micro-batch): full_shard gathers every
//              unit in forward and again in backward and reduce-scatters the gradients;
//              shard_grad_op gathers once; hybrid_shard does full_shard inside a node and
//              all-reduces its gradient shard across nodes; no_shard and ddp all-reduce
//              the gradients. Gathers move the param dtype, reductions the reduce dtype.
//              A collective whose group spans nodes runs at the slower of the intra- and
//              inter-node figures, else at the intra-node one.
//   overlap    FSDP's prefetch (forward_prefetch, backward_prefetch != none) gathers the
//              next unit while this one computes: the exposed communication is
//              max(comm - compute, comm / units) (the first gather is never hidden);
//              without prefetch none is hidden. ddp's bucketed all-reduce overlaps the
//              backward: max(comm - backward, 0).
//   offload    cpu_offload copies each gathered unit's shard host to device for every
//              gather and each gradient shard back per micro-batch, over host_gbs, not
//              overlapped; AdamW then runs on the host, which is not modelled.
//   step       compute + recompute + exposed comm + offload.
// Not modelled: kernel launch and Python-free framework overheads, the data loader,
// memory-bound kernels (norms, softmax), stragglers, NCCL's tree algorithms.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "backend/fsdp_plan/cluster.h"
#include "backend/fsdp_plan/plan.h"

namespace fs::fsdp_plan {

struct StepFlops {
  double forward = 0;  // per optimizer step, every micro-batch and dataset
  double backward = 0;
  double recompute = 0;  // with checkpointing
};

struct StepTime {
  StepFlops flops;
  double computeS = 0;
  double recomputeS = 0;
  int64_t commBytes = 0;  // sent per rank per step
  double commS = 0;
  double exposedCommS = 0;
  double offloadS = 0;
  double totalS() const { return computeS + recomputeS + exposedCommS + offloadS; }
};

// NOTE [Step-time model], FLOPs for the config's micro-batches and accumulation.
StepFlops stepFlops(const ParamInventory& inventory, const protocol::RunConfig& config);

// `precision` is the entry's (replicatedPrecisionOf for single / ddp).
StepTime estimateStepTime(const Plan& plan, const PlanEntry& entry, const PrecisionPlan& precision,
                          const protocol::RunConfig& config, const Cluster& cluster);

}  // namespace fs::fsdp_plan

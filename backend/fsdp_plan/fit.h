// Fit a run to a cluster (`flamingo-train plan --fit`, the planner's Fit to
// cluster): every strategy x wrap policy x micro-batch split x gradient
// checkpointing x precision x cpu_offload, each planned (makePlan, GPU mode
// by default) and timed (step_time.h), the ones that fit ranked by step time
// with a reason each, the others with what they exceed.
//
// NOTE [Fit search]: the global batch per dataset (batch_size x
// grad_accum_steps x the config's ranks) is kept: on the cluster's W ranks
// each rank takes global / W samples a step, split as micro-batch x
// accumulation over the divisors of the datasets' common per-rank count (a
// global batch that does not divide over W is an error naming the dataset).
// At one rank the FSDP strategies shard nothing and run alike: only
// full_shard and single are tried; hybrid_shard only on several nodes;
// single / ddp (parallel.mode ddp) have no units, so no wrap policy, no
// cpu_offload, and only a float32 weight precision (validation refuses half
// weights without FSDP). A choice fits when its device bytes (GPU mode:
// reserved by the caching allocator; CPU mode: the planned peak; with
// cpu_offload without the model state, which lives on the host) are at most
// memory per GPU and, with cpu_offload, the node's ranks' model state is at
// most its host memory, both after `headroom` (default 10 %: the planned peak
// was 8.3 % under the measured one for tiny, full_shard / transformer_layer,
// micro-batch 2+1 x 2 with checkpointing on 2 ranks (fit_budget_test), beyond
// the 5 % docs/planner.md "Accuracy of the peak" holds for accumulation 1;
// GPU mode's reserved bytes are a lower bound, NOTE [Reserved for a live set]).
// In CPU mode the device is the host: cpu_offload is not tried. Ranked by step
// time, then by margin.
//
// Thread-safety: pure function over plain values.
#pragma once

#include <string>
#include <vector>

#include "backend/fsdp_plan/cluster.h"
#include "backend/fsdp_plan/plan.h"
#include "backend/fsdp_plan/step_time.h"

namespace fs::fsdp_plan {

struct FitChoice {
  std::string strategy;             // a planner strategy name: full_shard .. no_shard, single, ddp
  std::string policy;               // wrap policy; "" for single / ddp
  std::vector<int64_t> microBatch;  // per dataset, per rank
  int64_t accumulation = 1;
  bool checkpointing = false;
  std::string precision;  // optim.precision
  bool cpuOffload = false;

  int64_t deviceBytes = 0;  // per GPU (NOTE [Fit search])
  int64_t hostBytes = 0;    // per node, offloaded model state
  int64_t margin = 0;       // memory per GPU - deviceBytes x (1 + headroom) (negative: over)
  StepTime time;
  std::string reason;                // ranked: why here; misfit: what it exceeds
  std::vector<std::string> exceeds;  // misfits: each limit exceeded

  // The config changes that make a run this choice, as `--set` assignments (KEY=VALUE).
  std::vector<std::string> assignments(const protocol::RunConfig& config, const Cluster& cluster) const;
  std::string label() const;  // "full_shard/transformer_layer mb 4x2 ckpt amp_bf16"
};

struct FitRequest {
  protocol::RunConfig config;
  Cluster cluster;
  PlanDevice device = PlanDevice::kCuda;
  std::vector<std::string> strategies;  // empty = all that apply (NOTE [Fit search])
  std::vector<std::string> policies;    // empty = all that apply
  std::vector<std::string> precisions;  // empty = the config's, fp32, amp_bf16, bf16
  double headroom = 0.10;               // a choice fits when bytes x (1 + headroom) <= the limit
};

struct FitResult {
  Cluster cluster;
  std::vector<FitChoice> ranked;   // fits, best first
  std::vector<FitChoice> misfits;  // least over first
  std::vector<std::string> notes;
};

// Errors name the field: a bad cluster (checkCluster), a global batch that does not divide, an
// unknown strategy, policy or precision, a config the planner refuses.
protocol::StatusOr<FitResult> fitToCluster(const FitRequest& request);

// The message for a result with nothing ranked: the budget and the least any choice needs.
std::string noFitMessage(const FitResult& result);

}  // namespace fs::fsdp_plan

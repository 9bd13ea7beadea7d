// Shard math: how each unit's flat groups are padded and split over ranks.
//
// NOTE [Flat groups]: ours shards each unit as one flat group per
// requires-grad setting (frozen and trainable parameters never share a flat
// buffer, so frozen ones never get gradient storage), the trainable ones
// split again by weight-decay group (the optimizer steps a flat group as
// one tensor). The reference's FSDP1
// has one flat parameter per unit. A group of n elements over a shard group
// of s ranks is padded to s x ceil(max(n, 1) / s) elements (backend/fsdp's FlatParameter calls
// shardNumel() below); every rank holds ceil(max(n, 1) / s) elements, the
// padding sitting at the end of the last ranks' chunks.
//
// Strategies (world W ranks on N nodes of W / N ranks each):
//   full_shard     shard over all W ranks; units gathered only while used.
//   shard_grad_op  shard over all W; units stay gathered from their forward
//                  until their backward (ZeRO-2).
//   hybrid_shard   shard inside a node (W / N ranks), replicate across the
//                  N nodes (gradients all-reduced between replicas).
//   no_shard       every rank holds everything (DDP through the same code).
// Replicated modes (NOTE [Replicated modes] in memory_estimate.h), what
// parallel.mode ddp runs, without FSDP's flat groups:
//   single         one process (parallel.mode ddp at world 1): the model as
//                  built, its gradients and AdamW state.
//   ddp            the same on every rank, plus distributed::GradientSync's flat
//                  gradient buckets (world > 1).
// strategyNames() lists all six; "all" (fsdpStrategyNames()) the first four.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/fsdp_plan/layout.h"
#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

enum class Strategy { kFullShard, kShardGradOp, kHybridShard, kNoShard, kSingle, kDdp };

const std::vector<std::string>& strategyNames();      // every planner strategy, stable order
const std::vector<std::string>& fsdpStrategyNames();  // FSDP's (config spellings): what "all" plans
std::string strategyName(Strategy strategy);
// single and ddp: parallel.mode ddp, no FSDP.
bool isReplicated(Strategy strategy);
// Unknown name -> InvalidArgument naming `field` (e.g. "--strategies").
protocol::StatusOr<Strategy> strategyFromName(const std::string& name, const std::string& field);

struct Topology {
  int64_t world = 1;
  int64_t nodes = 1;
};
// REQUIRES world % nodes == 0 (checkTopology).
int64_t shardGroupSize(Strategy strategy, const Topology& topology);
// world >= 1, 1 <= nodes <= world, world divisible by nodes; errors name --world / --nodes.
protocol::Status checkTopology(const Topology& topology);

// Elements per rank and padding of n elements over s ranks.
int64_t shardNumel(int64_t numel, int64_t shard_size);
int64_t paddingNumel(int64_t numel, int64_t shard_size);

struct FlatGroup {
  bool trainable = false;  // optimizer steps it (ours: trainable parameters)
  bool gradients = false;  // gets gradients (reference: also the unfrozen decoder layers)
  int64_t numel = 0;       // without padding
  int64_t padding = 0;
  int64_t shardNumel = 0;  // per rank, padding included
  Dtype storage = Dtype::kFloat32;
  int64_t shardBytes() const { return shardNumel * dtypeBytes(storage); }
  int64_t paddedNumel(int64_t shard_size) const { return shardNumel * shard_size; }
};

struct UnitShards {
  std::vector<FlatGroup>
      groups;                  // ours: trainable (decayed, then not) first, then frozen (NOTE [Flat groups])
  int64_t shardBytes() const;  // this unit's bytes on every rank
  int64_t padding() const;
};

struct ShardPlan {
  Strategy strategy = Strategy::kFullShard;
  Topology topology;
  int64_t shardSize = 1;
  std::vector<UnitShards> units;  // parallel to Layout::units
};

// `referenceGroups`: one flat parameter per unit (FSDP1) instead of one per
// requires-grad setting.
ShardPlan planShards(const Layout& layout, const PrecisionPlan& precision, Strategy strategy,
                     const Topology& topology, bool referenceGroups = false);

}  // namespace fs::fsdp_plan

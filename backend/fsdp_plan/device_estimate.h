// The planner's GPU mode (`flamingo-train plan --device cuda`): one rank's planned peak as the
// CUDA caching allocator would hold it, allocated and reserved (device_allocator.h).
//
// NOTE [Device estimate]: the peak's tensors as allocation requests, in the order the engine
// creates them:
//   model state  under FSDP one request per flat group and rank: its parameter shard, its
//                gradient shard (groups with gradients), AdamW's two moments (trainable
//                groups); in the replicated modes (single, ddp) the same per parameter of the
//                inventory (each parameter is its own tensor), and under ddp at world > 1 the
//                gradient buckets as one request of the trainable gradients' bytes.
//   the step     the batches (`inputs`), the loader's other batches and the step walk's
//                highest moment (gathered units + activations, RankMemory::stepPeak), one
//                request each: the planner models their bytes, not their tensors, so their
//                rounding is understated by under 512 B per tensor and their segments are
//                modelled as if each were one tensor.
// The requests add up to RankMemory::peak() exactly (tests hold them to it); `allocated`
// and `reserved` follow from NOTE [Reserved for a live set].
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "backend/fsdp_plan/device_allocator.h"
#include "backend/fsdp_plan/memory_estimate.h"
#include "backend/fsdp_plan/param_inventory.h"
#include "backend/fsdp_plan/precision_plan.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

// The planner's device modes: "cpu" (the default: bytes as planned) and "cuda".
enum class PlanDevice { kCpu, kCuda };
// "cpu" | "cuda"; anything else is InvalidArgument naming `field` (e.g. "--device").
protocol::StatusOr<PlanDevice> planDeviceFromName(const std::string& name, const std::string& field);

// NOTE [Device estimate]: the requests of one rank's peak.
std::vector<int64_t> peakRequests(const ParamInventory& inventory, const ShardPlan& shards,
                                  const PrecisionPlan& precision, const RankMemory& memory);
// cudaLiveSet(peakRequests(...)).
DeviceBytes estimateCudaMemory(const ParamInventory& inventory, const ShardPlan& shards,
                               const PrecisionPlan& precision, const RankMemory& memory);

}  // namespace fs::fsdp_plan

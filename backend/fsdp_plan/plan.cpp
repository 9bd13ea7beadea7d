#include "backend/fsdp_plan/plan.h"

namespace fs::fsdp_plan {

protocol::StatusOr<Plan> makePlan(const PlanRequest& req) {
  if (auto s = checkTopology(req.topology); !s) return s;
  Plan plan;
  plan.topology = req.topology;
  plan.device = req.device;
  auto inv = buildParamInventory(req.config.model);
  if (!inv) return inv.status();
  plan.inventory = std::move(*inv);
  auto precision = oursPrecision(req.config);
  if (!precision) return precision.status();
  plan.precision = *precision;
  plan.referencePrecision = referencePrecision(*precision);
  plan.activations = estimateActivations(req.config, plan.precision.compute);
  plan.referenceActivations =
      estimateActivations(req.config, plan.precision.compute, HeadLogits::kEveryPosition);

  auto strategies = req.strategies;
  if (strategies.empty()) {
    for (const auto& name : fsdpStrategyNames())
      strategies.push_back(*strategyFromName(name, "--strategies"));
  }
  for (const auto strategy : strategies) {
    if (strategy == Strategy::kSingle && req.topology.world > 1)
      return protocol::Status::invalidArgument("--strategies: single is one process, but --world is " +
                                               std::to_string(req.topology.world) +
                                               " (parallel.mode ddp on several ranks is ddp)");
    // NOTE [Half weights need FSDP] in protocol/config/validate.cpp: validation refuses the run, so there
    // is nothing to plan (the engine would stop at its first step, not hold half weights).
    if (isReplicated(strategy) && plan.precision.weight != Dtype::kFloat32)
      return protocol::Status::invalidArgument(
          "--strategies: " + strategyName(strategy) + " (parallel.mode ddp) with optim.precision '" +
          req.config.optim.precision +
          "': without FSDP the engine does not cast the model to half precision, so validation refuses "
          "the run; use amp_bf16 (fp32 weights, bf16 compute) or an FSDP strategy");
  }
  const PrecisionPlan replicatedPrecision = replicatedPrecisionOf(plan.precision);
  auto policies = req.policies;
  if (policies.empty()) {
    for (const auto& name : wrapPolicyNames()) {
      if (name != "custom" || !req.config.parallel.wrap_patterns.empty()) policies.push_back(name);
    }
  }

  auto addEntries = [&](const std::string& engine, const std::string& policy, const PrecisionPlan& prec,
                        bool reference) {
    const size_t index = plan.layouts.size() - 1;
    for (const auto strategy : strategies) {
      // OpenFlamingo offers FSDP1 full and hybrid sharding only.
      if (reference && strategy != Strategy::kFullShard && strategy != Strategy::kHybridShard) continue;
      PlanEntry e;
      e.engine = engine;
      e.policy = policy;
      e.strategy = strategy;
      e.layout = index;
      const PrecisionPlan& p = isReplicated(strategy) ? replicatedPrecision : prec;
      e.shards = planShards(plan.layouts[index], p, strategy, req.topology, reference);
      e.memory = estimateRankMemory(plan.layouts[index], e.shards, p, req.config,
                                    reference ? plan.referenceActivations : plan.activations);
      if (req.device == PlanDevice::kCuda)
        e.device = estimateCudaMemory(plan.inventory, e.shards, p, e.memory);
      plan.entries.push_back(std::move(e));
    }
  };
  for (const auto& name : policies) {
    auto policy = wrapPolicyFromName(name, req.config.parallel);
    if (!policy) return policy.status();
    auto layout = buildLayout(plan.inventory, *policy, plan.precision);
    if (!layout) return layout.status();
    plan.layouts.push_back(std::move(*layout));
    addEntries("ours", name, plan.precision, false);
  }
  if (req.reference) {
    auto layout = buildReferenceLayout(plan.inventory, plan.precision);
    if (!layout) return layout.status();
    plan.layouts.push_back(std::move(*layout));
    addEntries("reference", "openflamingo", plan.referencePrecision, true);
    if (!plan.inventory.tiedGroups.empty())
      plan.notes.push_back(
          "the reference's FSDP is documented as incompatible with tied LM embeddings; its figures assume "
          "the tied "
          "head shares the embedding's unit");
    if (req.config.optim.precision == "bf16" || req.config.optim.precision == "fp16")
      plan.notes.push_back(
          "the reference crashes with --precision bf16 / fp16; its figures are what it would need");
  }
  return plan;
}

}  // namespace fs::fsdp_plan

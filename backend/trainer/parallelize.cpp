#include "backend/trainer/parallelize.h"

#include "backend/fsdp_plan/layout.h"
#include "backend/step/optimizer.h"

namespace fs::trainer {

using protocol::Status;

namespace {

c10::ScalarType scalarType(fsdp_plan::Dtype d) {
  switch (d) {
    case fsdp_plan::Dtype::kBFloat16:
      return c10::kBFloat16;
    case fsdp_plan::Dtype::kFloat16:
      return c10::kHalf;
    case fsdp_plan::Dtype::kFloat32:
      return c10::kFloat;
    default:
      TORCH_CHECK(false, "FSDP: no mixed-precision dtype ", fsdp_plan::dtypeName(d));
  }
}

}  // namespace

protocol::StatusOr<std::shared_ptr<fsdp::ShardedModel>> parallelizeFlamingo(
    model::Flamingo& model, const protocol::RunConfig& config,
    std::shared_ptr<distributed::Communicator> comm, const ParallelizeOptions& options) {
  auto inventory = fsdp_plan::buildParamInventory(config.model);
  if (!inventory) return inventory.status();
  auto policy = fsdp_plan::wrapPolicyFromConfig(config.parallel);
  if (!policy) return policy.status();
  auto precision = fsdp_plan::oursPrecision(config);
  if (!precision) return precision.status();
  auto layout = fsdp_plan::buildLayout(*inventory, *policy, *precision);
  if (!layout) return layout.status();

  fsdp::ShardingOptions sharding;
  try {
    sharding.strategy = fsdp::parseStrategy(config.parallel.sharding_strategy);
  } catch (const c10::Error& e) {
    return Status::invalidArgument(e.what_without_backtrace());
  }
  sharding.ranksPerNode = std::max(1, options.ranksPerNode);
  sharding.forwardPrefetch = config.parallel.forward_prefetch;
  using Prefetch = fsdp::ShardingOptions::BackwardPrefetch;
  const auto& bp = config.parallel.backward_prefetch;
  sharding.backwardPrefetch = bp == "pre" ? Prefetch::kPre : bp == "post" ? Prefetch::kPost : Prefetch::kNone;
  sharding.limitAllGathers = static_cast<int>(config.parallel.limit_all_gathers);
  sharding.valuesFromNodeLeader = options.valuesFromNodeLeader;
  sharding.sharedShards = config.parallel.shared_shards;
  sharding.offloadShards = config.parallel.cpu_offload;  // NOTE [CPU offload]
  sharding.device = options.device;
  sharding.trainableGroup = [](const std::string& name) { return step::decaysWeight(name) ? 0 : 1; };
  // NOTE [Planner dtypes]: units gathered in the param dtype, frozen parameters stored in it, gradients
  // reduced in the reduce dtype; trainable shards (the master copy, their gradients and AdamW's state)
  // in the weight dtype: float32 but under bf16 / fp16, which train half-precision weights.
  sharding.dtypes.gather = scalarType(precision->param);
  sharding.dtypes.reduce = scalarType(precision->reduce);
  sharding.dtypes.store = scalarType(precision->weight);

  std::map<std::string, std::shared_ptr<torch::nn::Module>> modules;
  for (const auto& item : model->named_modules()) modules[item.key()] = item.value();
  const auto announced = model->announcedModules();
  std::vector<fsdp::UnitSpec> specs;
  for (const auto& unit : layout->units) {
    if (unit.path.empty()) continue;  // the root: everything no unit owns
    auto it = modules.find(unit.path);
    if (it == modules.end()) {
      return Status::invalidArgument("FSDP layout names module '" + unit.path +
                                     "', which the model does not have");
    }
    specs.push_back({unit.path, it->second, announced.count(it->second.get()) > 0});
  }
  std::shared_ptr<fsdp::ShardedModel> sharded;
  try {
    sharded = std::make_shared<fsdp::ShardedModel>(*model, std::move(specs), std::move(comm), sharding);
  } catch (const c10::Error& e) {
    // Units sharing a parameter (wrap policy), a node size that does not divide the world (strategy).
    return Status::invalidArgument(std::string("FSDP (parallel.wrap_policy '") + config.parallel.wrap_policy +
                                   "', parallel.sharding_strategy '" + config.parallel.sharding_strategy +
                                   "'): " + e.what_without_backtrace());
  }
  model->setUnitHooks(sharded);
  return sharded;
}

std::vector<model::GateValues> gateValues(model::FlamingoImpl& model, fsdp::ShardedModel* sharded) {
  if (!sharded) return model.gateValues();
  return model.gateValues(
      [sharded](const std::vector<torch::Tensor>& p) { return sharded->parameterValues(p); });
}

}  // namespace fs::trainer

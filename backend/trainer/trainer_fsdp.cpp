// The Trainer under parallel.mode = fsdp.
//
// NOTE [FSDP in the engine]: the model is built, frozen and resumed whole
// (a checkpoint of any world size loads as in a single-process run); under
// parallel.delayed_init only on the first rank of each node, the others
// building its shapes only (model/shapes_only.h) and receiving each flat
// parameter's values from it while sharding (NOTE [Values from the node's
// first rank]), else on every rank, rank 0's weights then broadcast
// (sync_module_states). parallelizeFlamingo() shards it with the
// config's wrap policy and strategy and the optimizer moves onto the
// trainable shards, its state sliced from the unsharded one (NOTE [Sharded
// optimizer state]). In an iteration every rank runs every backward, even
// of a non-finite or empty loss (as loss x 0): gathers and reduce-scatters
// happen inside backward, so a rank that skipped one would leave the others
// waiting; the agreed skip then drops those gradients on every rank. The
// embedding row mask is a gradient hook on the embedding weight (it
// commutes with the sum over ranks). The first window keeps every
// full-size gradient until the end of backward for the gradient-flow check;
// from then on units are reduce-scattered during backward (NOTE [Unit
// lifecycle]) into the shards, scaled by 1 / world so the shards hold DDP's
// average, and later checks read the shards. Clipping runs on the shards
// (global or per unit, optim.clip_mode). Checkpoints gather one unit at a
// time and write the same file as a single-process run, or with
// checkpoint.format: sharded each rank writes its shards (NOTE [Sharded
// checkpoints] in checkpoint_sharded.h).
#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "backend/trainer/trainer_impl.h"
#include "backend/trainer/parallelize.h"
#include "backend/fsdp/sharded_clip.h"
#include "backend/telemetry/memory_tracker.h"

namespace fs::engine {

using protocol::Status;

namespace {

// Each runtime unit's place in the layout event (its gather_order): the root first, then the units in
// order, those without parameters left out (-1). One rule for the layout event and for the memory event's
// gathered_at_peak, which names units by these places.
std::vector<int> layoutPositions(const fsdp::ShardedModel& sharded) {
  const auto& units = sharded.units();
  std::vector<int> at(units.size(), -1);
  int next = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    const size_t i = (k + units.size() - 1) % units.size();  // the root (last) first
    if (!units[i].flats.empty()) at[i] = next++;
  }
  return at;
}

}  // namespace

Status Trainer::shardModel() {
  if (config_.parallel.cpu_offload && !device_.is_cpu()) {
    return Status::unsupported("parallel.cpu_offload: keeping shards in host memory is not implemented for " +
                               device_.str() + " yet; set parallel.cpu_offload=false");
  }
  ParallelizeOptions o;
  o.ranksPerNode = ranksPerNode();
  o.valuesFromNodeLeader = delayedInit();
  auto sharded = parallelizeFlamingo(model_, config_, comm_, o);
  if (!sharded) return sharded.status();
  sharded_ = std::move(sharded.value());
  shards_ = fsdp::shardParameters(*sharded_);
  const auto fullState = optimizer_->stateDict(schedule_->baseLrs());
  std::vector<train::NamedParameter> named;
  for (const auto& s : shards_) named.push_back(s.param);
  auto optimizer = std::make_unique<train::GroupedAdamW>(named, config_.optim);
  auto state = fsdp::toShardState(fullState, trainable_, shards_, *sharded_, config_.optim.weight_decay);
  if (!state) return state.status();
  if (Status s = optimizer->loadStateDict(state.value()); !s) return s;
  optimizer_ = std::move(optimizer);
  schedule_->apply(optimizer_->adamw());
  if (!config_.model.freeze_lm_embeddings) {
    // The row mask as the gradient arrives, before any reduce-scatter (a unit may be reduced during
    // backward); a row mask commutes with the sum over ranks.
    const torch::Tensor mask = model_->embeddingGradientRowMask();
    model_->inputEmbedding()->weight.register_hook(
        [mask](const torch::Tensor& g) { return g * mask.to(g.dtype()); });
  }
  int64_t units = 0;
  for (const auto& u : sharded_->units()) units += u.flats.empty() ? 0 : 1;
  log_->info("FSDP {}: {} units, {} trainable shards, {} bytes of shards on this rank",
             config_.parallel.sharding_strategy, units, shards_.size(), sharded_->shardBytes());
  if (sharded_->shardsShared()) {
    log_->info("FSDP shards: node-shared (gathers copy them without a collective)");
  } else {
    log_->info("FSDP shards: private ({})", sharded_->whyShardsNotShared());
  }
  return Status::ok();
}

void Trainer::finishShardedBackward(bool checkFlow) {
  // The first window's check reads every member's full-size gradient, so units are reduced during
  // backward only from then on; later checks read the shards (checkGradientFlow).
  if (checkFlow && !structureChecked_) checkGradientFlow();
  sharded_->finishBackward(/*settle=*/false);  // settled once every pass is done (trainIteration)
  sharded_->setReduceDuringBackward(structureChecked_);
}

std::vector<model::GateValues> Trainer::gateValues() {
  if (!sharded_) return model_->gateValues();
  // The gates live in shards: read them with one collective.
  return model_->gateValues([this](const std::vector<torch::Tensor>& p) { return sharded_->parameterValues(p); });
}

protocol::RankMemory Trainer::rankMemory() const {
  auto m = telemetry::memorySnapshot().toRankMemory(static_cast<int>(options_.rank));
  if (sharded_) {
    // Model state as the runtime holds it (the planner's exact figures), not the tracker's phase peaks,
    // which also count activation gradients and step temporaries.
    m.params = sharded_->shardBytes();
    m.grads = sharded_->peakShardGradientBytes();
    m.optimizer = optimizer_->stateBytes();
    m.gathered = sharded_->peakGatheredBytes();
    m.gathered_units = sharded_->peakUnitsGathered();
    const auto at = layoutPositions(*sharded_);
    for (size_t i : sharded_->unitsAtPeak()) m.gathered_at_peak.push_back(at[i]);
    std::sort(m.gathered_at_peak.begin(), m.gathered_at_peak.end());
    sharded_->resetPeak();
  }
  return m;
}

protocol::LayoutEvent Trainer::shardedLayout() const {
  protocol::LayoutEvent e;
  e.max_units_gathered = static_cast<int>(config_.parallel.limit_all_gathers);
  // The root is gathered first and held throughout (NOTE [Gather order] in fsdp_plan/layout.h).
  const auto& units = sharded_->units();
  const auto at = layoutPositions(*sharded_);
  e.units.resize(static_cast<size_t>(std::count_if(at.begin(), at.end(), [](int p) { return p >= 0; })));
  for (size_t i = 0; i < units.size(); ++i) {
    const auto& u = units[i];
    if (at[i] < 0) continue;
    protocol::LayoutUnit& lu = e.units[static_cast<size_t>(at[i])];
    lu.path = u.module ? u.path : "";
    lu.gather_order = at[i];
    int64_t shardBytes = 0;
    for (const auto& f : u.flats) {
      lu.param_count += f->numel();
      if (!f->trainable()) lu.frozen_params += f->numel();
      lu.trainable = lu.trainable || f->trainable();
      lu.padding_elems += f->padding();
      shardBytes += f->shardBytes();
      if (lu.dtype.empty() || f->trainable()) lu.dtype = dtypeName(f->shard().scalar_type());
    }
    lu.shard_bytes.assign(static_cast<size_t>(options_.world), shardBytes);
  }
  return e;
}

int Trainer::layoutUnitCount() const {
  if (!sharded_) return 0;
  const auto at = layoutPositions(*sharded_);
  return static_cast<int>(std::count_if(at.begin(), at.end(), [](int p) { return p >= 0; }));
}

}  // namespace fs::engine

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
// checkpoints] in checkpoint_sharded.h). With parallel.cpu_offload the shards,
// their gradients and AdamW's state live in host memory and the optimizer
// steps there (NOTE [CPU offload] in fsdp/flat_param.h), on any device.
#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "backend/trainer/parallelize.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;

Status Trainer::shardModel() {
  ParallelizeOptions o;
  o.ranksPerNode = place_.ranksPerNode;
  o.valuesFromNodeLeader = place_.delayedInit;
  o.device = device_;  // a shapes-only rank's parameters are host tensors; its units and shards live here
  auto sharded = parallelizeFlamingo(state_.model, config_, groups_.device, o);
  if (!sharded) return sharded.status();
  state_.sharded = std::move(sharded.value());
  state_.shards = fsdp::shardParameters(*state_.sharded);
  const auto fullState = state_.optimizer->stateDict(state_.schedule->baseLrs());
  std::vector<step::NamedParameter> named;
  for (const auto& s : state_.shards) named.push_back(s.param);
  auto optimizer = std::make_unique<step::GroupedAdamW>(named, config_.optim);
  auto state = fsdp::toShardState(fullState, state_.trainable, state_.shards, *state_.sharded,
                                  config_.optim.weight_decay);
  if (!state) return state.status();
  if (Status s = optimizer->loadStateDict(state.value()); !s) return s;
  state_.optimizer = std::move(optimizer);
  state_.schedule->apply(state_.optimizer->adamw());
  if (!config_.model.freeze_lm_embeddings) {
    // The row mask as the gradient arrives, before any reduce-scatter (a unit may be reduced during
    // backward); a row mask commutes with the sum over ranks.
    const torch::Tensor mask = state_.model->embeddingGradientRowMask();
    state_.model->inputEmbedding()->weight.register_hook(
        [mask](const torch::Tensor& g) { return g * mask.to(g.dtype()); });
  }
  int64_t units = 0;
  for (const auto& u : state_.sharded->units()) units += u.flats.empty() ? 0 : 1;
  log_->info("FSDP {}: {} units, {} trainable shards, {} bytes of shards on this rank",
             config_.parallel.sharding_strategy, units, state_.shards.size(), state_.sharded->shardBytes());
  if (state_.sharded->shardsShared()) {
    log_->info("FSDP shards: node-shared (gathers copy them without a collective)");
  } else {
    log_->info("FSDP shards: private ({})", state_.sharded->whyShardsNotShared());
  }
  const std::string model = state_.sharded->computeDevice().str(),
                    shards = state_.sharded->shardDevice().str();
  if (config_.parallel.cpu_offload) {
    log_->info(
        "FSDP shards on {} (parallel.cpu_offload: their gradients and the optimizer too; each gather "
        "copies a shard to {}{})",
        shards, model, model == shards ? ", which gains nothing on the CPU" : "");
  } else {
    log_->info("FSDP shards on {} with the model", shards);
  }
  return Status::ok();
}

void Trainer::finishShardedBackward(bool checkFlow) {
  // The first window's check reads every member's full-size gradient, so units are reduced during
  // backward only from then on; later checks read the shards (checkGradientFlow).
  if (checkFlow && !structureChecked_) checkGradientFlow();
  state_.sharded->finishBackward(/*settle=*/false);  // settled once every pass is done (trainIteration)
  state_.sharded->setReduceDuringBackward(structureChecked_);
}

}  // namespace fs::trainer

// One training iteration with OpenFlamingo's semantics (spec section 4):
// a micro-batch of every dataset, forward / loss / backward each, and on the
// last micro-step of an accumulation window the embedding row mask, global
// clipping, AdamW and the lr schedule.
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "backend/fsdp/sharded_clip.h"
#include "backend/model/common.h"
#include "backend/step/grad_clip.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"
#include "backend/telemetry/memory_tracker.h"
#include "backend/trainer/device_batch.h"
#include "backend/trainer/iteration_agreement.h"
#include "backend/trainer/parallelize.h"
#include "backend/trainer/trainer_impl.h"

namespace fs::trainer {

using protocol::Status;
using telemetry::MemoryPhase;
using telemetry::Phase;

protocol::StatusOr<StepResult> Trainer::trainIteration(const data::StepBatches& batches) {
  StepResult r;
  const bool compat = config_.compat == "openflamingo";
  // The reference divides by grad_accum_steps even in a short last window; we
  // divide by the window's real size so every window averages its micro-steps.
  const double window = compat ? static_cast<double>(config_.optim.grad_accum_steps)
                               : static_cast<double>(plan_->windowSize(state_.counters.stepInEpoch));
  const bool closesWindow = plan_->endsWindow(state_.counters.stepInEpoch);
  if (faults_.throwAt(options_.rank, state_.counters.iteration)) {
    throw std::runtime_error("injected fault (FS_FAULT_THROW) at iteration " +
                             std::to_string(state_.counters.iteration));
  }
  // NOTE [Distributed step] in trainer_dist.cpp: every rank takes the same decisions.
  const size_t D = batches.batches.size();
  // Labels from the host batches (NOTE [Host to device copies] in backend/data/batch.h).
  std::vector<torch::Tensor> labels;
  std::vector<int64_t> targets;
  for (const data::Batch& b : batches.batches) {
    labels.push_back(step::makeLabels(b.kind, b.inputIds, tokens_));
    targets.push_back(step::countTargets(labels.back()));
  }
  IterationAgreement agreement(place_.distributed() ? groups_.host : nullptr, compat);
  agreement.open(targets, reporter_->pendingFigures());  // the ranks' token weighting
  std::vector<double> values(D, 0.0);
  for (size_t i = 0; i < D; ++i) {
    const data::Batch& b = batches.batches[i];
    const protocol::DatasetConfig& cfg = config_.data.datasets.at(i);
    step::LmLoss loss;
    {
      MemoryPhase phase(Phase::kActivations);
      if (state_.sharded) state_.sharded->beginForward();
      loss = forwardLoss(b, labels[i], compat);
    }
    if (i == 0 && faults_.nanLossAt(options_.rank, state_.counters.iteration))
      loss.loss = loss.loss * std::nan("");
    if (const double f = faults_.spikeAt(options_.rank, state_.counters.iteration); i == 0 && f != 1.0)
      loss.loss = loss.loss * f;
    r.samples[b.dataset] = b.samples;
    r.tokens[b.dataset] = b.tokens;
    values[i] = loss.noTargets ? 0.0 : loss.loss.item<double>();
    r.localLoss[b.dataset] = values[i];
    if (i == 0) {
      agreement.awaitOpening();
      reporter_->completeReport(agreement.gatheredFigures());
    }
    if (i + 1 == D) agreement.close(values);
    // A non-finite loss skips the iteration on every rank (decided after the
    // closing agreement); its backward would only spread NaN.
    const bool finite = std::isfinite(values[i]);
    if (finite && loss.noTargets) {
      // OpenFlamingo's usual NaN source: nothing to learn from, so no backward.
      emit(protocol::WarningEvent{"no_supervised_tokens",
                                  "dataset '" + b.dataset + "' batch " + std::to_string(b.index) +
                                      " has no supervised token; its loss is skipped",
                                  static_cast<int>(options_.rank)});
    }
    const bool learn = finite && !loss.noTargets;
    if (!learn && !state_.sharded) continue;  // FSDP: NOTE [FSDP in the engine]
    MemoryPhase phase(Phase::kGradients);
    if (gradSync_ && closesWindow && i + 1 == D) gradSync_->arm();
    const double scale = learn ? cfg.loss_multiplier * agreement.backwardScale(i) / window : 0.0;
    if (state_.sharded) state_.sharded->beginBackward(1.0 / static_cast<double>(options_.world));
    const torch::Tensor scaled = state_.scaler ? state_.scaler->scale(loss.loss) : loss.loss;
    (scaled * scale).backward();
    if (state_.sharded) finishShardedBackward(closesWindow && i + 1 == D);
  }
  agreement.awaitClosing();
  // The passes left their last reductions in flight (NOTE [Node-shared shards]): the shards' gradients are
  // read from here on, also to drop them.
  if (state_.sharded) state_.sharded->settleGradients();
  r.waitS += agreement.waitSeconds() + (state_.sharded ? state_.sharded->takeCommSeconds() : 0.0);
  for (size_t i = 0; i < D; ++i) r.loss[batches.batches[i].dataset] = agreement.loss(i);
  for (size_t i = 0; i < D; ++i) {
    if (!agreement.nonFinite(i)) continue;
    // Buckets another rank launched during its backward complete on every rank first.
    if (closesWindow) synchronizeGradients(&r);
    // Skip only this iteration's update; the reference also drops the whole window.
    state_.optimizer->zeroGrad(true);
    r.skipped = true;
    const std::string& name = batches.batches[i].dataset;
    r.skipReason = "non-finite loss on dataset '" + name + "'" +
                   (place_.distributed() && std::isfinite(values[i]) ? " (on another rank)" : "");
    return r;
  }
  if (closesWindow) optimizerStep(&r);
  return r;
}

// NOTE [Host to device copies] (backend/data/batch.h): the decisions that read
// token values are taken on the host batch (the labels and their target count,
// whether padding is skipped, and the index sets the forward leaves work out
// with: NOTE [Index sets from the host] in backend/model/common.h), then the
// batch, its labels and the index sets go to device_ in one place, here
// (validation comes through here too). What the step still reads back from
// the device (host syncs on CUDA):
//  - each loss's value (loss.item() in trainIteration: the step event and the
//    NaN agreement need it);
//  - the gradient norm and the clip coefficient (train/grad_clip.cpp; the
//    finiteness test decides the step), and the gradient-flow check's sums and
//    gate values at the first steps (checkGradientFlow).
// wrong_device_test runs the tiny step and the compare shapes (which leave
// padding, media slots and non-attending tokens out) on the meta device,
// where any other read-back stops it. (The packed attention's row offsets,
// lm_family.cpp, are read back on the CPU only, where its kernel runs.)
step::LmLoss Trainer::forwardLoss(const data::Batch& host, const torch::Tensor& hostLabels, bool compat) {
  const DeviceBatch d = toDeviceForForward(*state_.model, host, hostLabels, tokens_.pad,
                                           config_.model.lm.width, compat, device_);
  step::AutocastScope autocast(precision_, device_);
  return forwardLossOn(*state_.model, d, precision_.inputDtype);
}

// NOTE [Loss scaling in the step]
// fp16 (and any run with TrainerOptions::lossScaling) multiplies each backward's
// loss by the scaler's S (a power of two: exact), so small gradients survive
// fp16. Before clipping, the gradients the optimizer steps are multiplied by
// 1/S with no host sync. The decision "overflow or not" is the clip's global
// norm being non-finite: it is computed anyway, it is the same on every rank
// (DDP reduces before it, FSDP's norm is all-reduced), so every rank skips the
// same steps and backs S off alike without another collective. The skipped
// step is torch.cuda.amp.GradScaler's: no update, S halves; 2000 good steps in
// a row double it. S is saved in checkpoints (grad_scaler: GradScaler.state_dict()'s
// fields) and restored on resume.
namespace {
std::string formatScale(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

void Trainer::optimizerStep(StepResult* r) {
  synchronizeGradients(r);
  MemoryPhase phase(Phase::kOptimizer);
  const step::ClipOptions clipOptions{config_.optim.max_grad_norm};
  if (state_.scaler) state_.scaler->unscaleWithoutCheck(state_.optimizer->parameters());
  step::ClipResult clip;
  if (state_.sharded) {  // the row mask is a gradient hook; the check reads the shards (NOTE [FSDP in the
                         // engine])
    const auto scope =
        config_.optim.clip_mode == "per_unit" ? fsdp::ClipScope::kPerUnit : fsdp::ClipScope::kGlobal;
    if (!gradientFlowChecked_) checkGradientFlow();
    clip = fsdp::clipShardedGradNorm(*state_.sharded, clipOptions, scope).total;
  } else {
    if (!config_.model.freeze_lm_embeddings) state_.model->maskEmbeddingGradient();
    if (!gradientFlowChecked_) checkGradientFlow();
    clip = step::clipGradNorm(state_.optimizer->parameters(), clipOptions);
    reporter_->noteGradients(gradSync_ ? gradSync_->bucketBytes() : 0);  // NOTE [Replicated model state]
  }
  if (state_.scaler) {
    const double before = state_.scaler->scaleValue();
    state_.scaler->update(!clip.finite);
    r->lossScale = before;
    if (!clip.finite) {
      state_.optimizer->zeroGrad(true);
      r->skipped = true;
      r->skipReason = "gradient overflow at loss scale " + formatScale(before) + "; the scale backs off to " +
                      formatScale(state_.scaler->scaleValue());
      return;
    }
  }
  if (!clip.finite) {
    state_.optimizer->zeroGrad(true);
    r->skipped = true;
    r->skipReason = "non-finite gradient norm";
    return;
  }
  r->gradNorm = clip.norm;
  state_.schedule->apply(state_.optimizer->adamw());
  if (lrFactorStepsLeft_ > 0) {  // after a rollback (NOTE [Loss-spike guard] in loss_spike_guard.h)
    for (auto& group : state_.optimizer->adamw().param_groups())
      group.options().set_lr(group.options().get_lr() * lrFactor_);
    --lrFactorStepsLeft_;
  }
  if (state_.sharded) state_.sharded->beginShardWrite();
  state_.optimizer->step();
  if (state_.sharded) state_.sharded->endShardWrite();
  state_.schedule->step();
  state_.optimizer->zeroGrad(true);
  r->optimizerStepped = true;
  ++state_.counters.step;
}

// NOTE [Gradient-flow check]: every trainable tensor should get a non-zero
// gradient and no frozen one any gradient. Gates start at 0, so while every
// gate is still 0 the cross-attention and Perceiver weights get exactly zero
// gradients by construction (only the gates and the new embedding rows see a
// signal); and with warmup the first steps run at lr 0, so gates stay 0.
// Missing and frozen-with-gradient tensors are checked at the first step;
// all-zero gradients at the first step where every gate is open.
void Trainer::checkGradientFlow() {
  const bool gatesOpen = [&] {
    for (const auto& g : gateValues(*state_.model, state_.sharded.get())) {
      if (g.attn == 0.0 || g.ff == 0.0) return false;
    }
    return true;
  }();
  if (structureChecked_ && !gatesOpen) return;
  std::vector<std::string> missing, zero, frozenWithGrad;
  // FSDP after the first window: the members' gradients are in the shards already.
  const bool fromShards = state_.sharded && structureChecked_;
  const auto sums = fromShards ? state_.sharded->gradientAbsSums() : std::map<std::string, double>{};
  for (const auto& p : state_.trainable) {
    const torch::Tensor g = p.tensor.grad();
    if (fromShards) {
      if (sums.at(p.name) == 0.0) zero.push_back(p.name);
    } else if (!g.defined()) {
      missing.push_back(p.name);
    } else if (gatesOpen && g.abs().sum().item<double>() == 0.0) {
      zero.push_back(p.name);
    }
  }
  const bool firstCall = !structureChecked_;
  structureChecked_ = true;
  gradientFlowChecked_ = gatesOpen;
  for (const auto& [name, t] : state_.model->namedParameters()) {
    if (!t.requires_grad() && t.grad().defined()) frozenWithGrad.push_back(name);
  }
  if (!firstCall) {  // reported at the first step already
    missing.clear();
    frozenWithGrad.clear();
  }
  auto report = [&](const char* code, const std::string& what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 8) list += ", and " + std::to_string(names.size() - 8) + " more";
    const std::string message = std::to_string(names.size()) + " " + what + ": " + list;
    log_->warn("gradient flow: {}", message);
    emit(protocol::WarningEvent{code, message, static_cast<int>(options_.rank)});
  };
  report("grad_missing", "trainable tensor(s) got no gradient", missing);
  report("grad_zero", "trainable tensor(s) got an all-zero gradient", zero);
  report("grad_on_frozen", "frozen tensor(s) got a gradient", frozenWithGrad);
  if (options_.strict && (!missing.empty() || !zero.empty() || !frozenWithGrad.empty())) {
    throw std::runtime_error("gradient-flow check failed (strict mode); see the warnings above");
  }
}

}  // namespace fs::trainer

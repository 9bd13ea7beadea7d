// One batch made ready for the forward on the rank's device: the decisions
// that read token values taken on the host batch (padding, the loss's
// targets, the index sets), then the batch, its targets and the index sets
// copied to the device in one place (NOTE [Host to device copies] in
// trainer_step.cpp). Trainer::forwardLoss runs it and forwardLossOn; the
// train-step benchmark and the step tests run the same. Stateless; the model
// is only read.
#pragma once

#include <torch/types.h>

#include "backend/data/batch.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/model/output_head.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"

namespace fs::trainer {

struct DeviceBatch {
  data::Batch batch;     // on the device
  torch::Tensor labels;  // (B, L), on the device
  model::Padding padding = model::Padding::kCompute;
  model::IndexSets sets;  // on the device
  step::LossOptions lossOptions;
  // NOTE [Logits at the targets] (backend/model/output_head.h): the positions
  // and labels of the loss's targets, on the device; select.positions
  // undefined = every position's logits (the reference's way).
  model::LogitSelection select;
  torch::Tensor targets;  // (P)
};

// skip_padding false: compute every padded position and every position's
// logits, as the reference does (the benchmark's --compute-padding).
inline DeviceBatch toDeviceForForward(const model::FlamingoImpl& model, const data::Batch& host,
                                      const torch::Tensor& host_labels, int64_t pad_id, int64_t lm_width,
                                      bool compat, torch::Device device, bool skip_padding = true) {
  DeviceBatch out;
  // NOTE [Dead positions] (backend/step/labels.h): skipped with the padding, as masked positions.
  const torch::Tensor dead = skip_padding ? step::deadPositions(host_labels) : torch::Tensor();
  out.padding = skip_padding ? model::paddingFor(host.inputIds, host.attentionMask, pad_id, lm_width, dead)
                             : model::Padding::kCompute;
  data::Batch forward = host;
  if (out.padding == model::Padding::kSkip && dead.any().item<bool>())
    forward.attentionMask = host.attentionMask.masked_fill(dead, 0);
  out.lossOptions.referenceNaN = compat;
  step::Targets targets;
  if (skip_padding) targets = step::targetsOf(host_labels);
  out.lossOptions.targets = skip_padding ? targets.positions.size(0) : step::countTargets(host_labels);
  const model::IndexSets hostSets =
      model.indexSets(forward.inputIds, forward.attentionMask, forward.images.size(1), out.padding);
  out.batch = data::toDevice(forward, device);
  out.labels = data::toDevice(host_labels, device);
  out.sets = {data::toDevice(hostSets.realTokens, device), data::toDevice(hostSets.slots, device),
              data::toDevice(hostSets.attending, device), hostSets.unpadded};
  if (skip_padding) {
    out.select = model.targetSelection(data::toDevice(targets.positions, device));
    out.targets = data::toDevice(targets.labels, device);
  }
  return out;
}

// Trainer::forwardLoss's forward and loss on a DeviceBatch, inside the
// caller's autocast scope; images in `image_dtype`. use_sets false: the
// model picks its index sets itself.
inline step::LmLoss forwardLossOn(model::FlamingoImpl& model, const DeviceBatch& d,
                                  c10::ScalarType image_dtype, bool use_sets = true) {
  const model::IndexSets* sets = use_sets ? &d.sets : nullptr;
  if (!d.select.positions.defined()) {
    const torch::Tensor logits = model.forward(d.batch.images.to(image_dtype), d.batch.inputIds,
                                               d.batch.attentionMask, d.padding, sets);
    return step::causalLmLoss(logits, d.labels, d.lossOptions);
  }
  const torch::Tensor logits = model.forward(d.batch.images.to(image_dtype), d.batch.inputIds,
                                             d.batch.attentionMask, d.padding, sets, &d.select);
  return step::lmLossAtTargets(logits, d.targets, d.lossOptions);
}

}  // namespace fs::trainer

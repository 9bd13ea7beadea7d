// One batch made ready for the forward on the rank's device: the decisions
// that read token values taken on the host batch (padding, the loss's target
// count, the index sets), then the batch, its labels and the index sets
// copied to the device in one place (NOTE [Host to device copies] in
// trainer_step.cpp). Trainer::forwardLoss runs it; the train-step benchmark
// and the step tests run the same. Stateless; the model is only read.
#pragma once

#include <torch/types.h>

#include "backend/data/batch.h"
#include "backend/model/common.h"
#include "backend/model/flamingo.h"
#include "backend/step/labels.h"
#include "backend/step/loss.h"

namespace fs::trainer {

struct DeviceBatch {
  data::Batch batch;     // on the device
  torch::Tensor labels;  // on the device
  model::Padding padding = model::Padding::kCompute;
  model::IndexSets sets;  // on the device
  step::LossOptions lossOptions;
};

// skip_padding false: compute every padded position (the benchmark's --compute-padding).
inline DeviceBatch toDeviceForForward(const model::FlamingoImpl& model, const data::Batch& host,
                                      const torch::Tensor& host_labels, int64_t pad_id, int64_t lm_width,
                                      bool compat, torch::Device device, bool skip_padding = true) {
  DeviceBatch out;
  out.padding = skip_padding ? model::paddingFor(host.inputIds, host.attentionMask, pad_id, lm_width)
                             : model::Padding::kCompute;
  out.lossOptions.referenceNaN = compat;
  out.lossOptions.targets = step::countTargets(host_labels);
  const model::IndexSets hostSets =
      model.indexSets(host.inputIds, host.attentionMask, host.images.size(1), out.padding);
  out.batch = data::toDevice(host, device);
  out.labels = data::toDevice(host_labels, device);
  out.sets = {data::toDevice(hostSets.realTokens, device), data::toDevice(hostSets.slots, device),
              data::toDevice(hostSets.attending, device), hostSets.unpadded};
  return out;
}

}  // namespace fs::trainer

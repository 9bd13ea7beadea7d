// Dynamic loss scaling for fp16, with torch.cuda.amp.GradScaler's semantics,
// written device-agnostically (plain tensor ops) so it runs and is tested on
// CPU.
//
// Per optimizer step:  backward(scale(loss)) ... ; unscale(params) (before
// clipping); step(optimizerStep); update().
//   scale(loss)   loss x S (S float32, initially 2^16)
//   unscale       g *= 1/S (1/S computed in double, rounded to float32, as
//                 torch), and records whether any gradient is inf / NaN
//   step          runs the optimizer step unless a non-finite gradient was
//                 found; returns whether it ran
//   update        non-finite: S *= backoff (0.5), tracker = 0; else tracker
//                 += 1 and at growth_interval (2000) consecutive good steps
//                 S *= growth (2.0) if that stays finite, tracker = 0
// A disabled scaler is the identity and always steps.
//
// Thread-safety: one thread.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::step {

struct GradScalerOptions {
  double initScale = 65536.0;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  bool enabled = true;
};

// GradScaler.state_dict(): {scale, growth_factor, backoff_factor,
// growth_interval, _growth_tracker}; declared once with the checkpoint's
// records (NOTE [Checkpoint records]).
using GradScalerState = protocol::GradScalerRecord;

class GradScaler {
 public:
  explicit GradScaler(const GradScalerOptions& options = {});

  bool enabled() const { return options_.enabled; }
  double scaleValue() const { return scale_; }
  int64_t growthTracker() const { return tracker_; }

  torch::Tensor scale(const torch::Tensor& loss) const;
  // Unscales the gradients of `params` once per step; returns true when one
  // of them is non-finite. A second call before update() is an error.
  bool unscale(const std::vector<torch::Tensor>& params);
  // Unscales first if unscale() was not called. Returns whether it stepped.
  bool step(const std::vector<torch::Tensor>& params, const std::function<void()>& optimizerStep);
  void update();

  // For a caller that learns about non-finite gradients elsewhere (NOTE [Loss
  // scaling in the step] in trainer_step.cpp: the clip's global norm, the same
  // on every rank): g *= 1/S with no host sync, then update(found).
  void unscaleWithoutCheck(const std::vector<torch::Tensor>& params);
  void update(bool foundNonFinite);

  GradScalerState state() const;
  void load(const GradScalerState& state);

 private:
  GradScalerOptions options_;
  float scale_;
  int64_t tracker_ = 0;
  bool unscaled_ = false;
  bool foundInf_ = false;
};

}  // namespace fs::step

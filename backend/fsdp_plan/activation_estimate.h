// Activation memory per micro-batch, from the model shapes and each
// dataset's batch size, tokens and images: what autograd keeps between a
// forward and its backward, plus the largest transient of the backward.
//
// NOTE [Activation formula] (elements; x compute-dtype bytes e unless said):
// per dataset, B = batch_size, L = max_tokens (laion 32, mmc4 256 when 0),
// T = images per sample (laion 1, mmc4 max_num_images), P = patches per
// image, n = latents, d = LM width, f = LM ffn, h = LM heads, dv = vision
// width, hp / hx = Perceiver / cross-attention heads, ip / ix their inner
// widths, m = ff mults, M = T n media tokens per sample.
//   vision tower   runs under no-grad: only its output features B T P dv
//                  stay; while it runs, one block's working set, per image
//                  (P+1)(6 dv + 2 hidden) + 2 heads (P+1)^2, is a candidate
//                  peak of its own (before anything else is kept)
//   perceiver      per layer and image: P dv + (P+n) dv + 2 (P+n) ip
//                  + 2 n ip + 2 hp n (P+n) + 6 n dv + 2 mp n dv; + 2 n dv
//   gated block    per token: 6 d + 2 ix + 2 mx d + 2 hx M;
//                  per sample: 2 M ix (k, v) + M dv (media, once)
//   decoder layer  per token: 7 d + 2 f + 2 h L (LLaMA 4 f: gated MLP;
//                  rotary families + 2 d for the rotated q, k)
//   head + loss    B L V (e + 4): logits and the fp32 log-softmax; the
//                  backward adds the fp32 logits gradient, B L V x 4
// With gradient checkpointing (decoder layers, gated blocks, Perceiver)
// only each checkpointed region's inputs stay (B L d per layer and block,
// the features for the Perceiver), plus one region recomputed at a time
// during backward (the largest). The peak of a micro-batch is what is kept
// plus the backward transient; LAION and MMC4 run one after the other, so
// the activation peak is the larger of the two.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/fsdp_plan/precision_plan.h"
#include "backend/protocol/config_types.h"

namespace fs::fsdp_plan {

struct DatasetActivations {
  std::string name;
  int64_t batch = 0;
  int64_t tokens = 0;                // L
  int64_t images = 0;                // T per sample
  int64_t withoutCheckpointing = 0;  // bytes, peak of one forward + backward
  int64_t withCheckpointing = 0;
};

struct ActivationEstimate {
  std::vector<DatasetActivations> datasets;
  int64_t withoutCheckpointing = 0;  // max over datasets
  int64_t withCheckpointing = 0;
};

ActivationEstimate estimateActivations(const protocol::RunConfig& config, Dtype compute);

}  // namespace fs::fsdp_plan

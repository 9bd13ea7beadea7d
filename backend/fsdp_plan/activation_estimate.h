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
//   decoder layer  per token: 7 d + MLP + h L attention probabilities (4
//                  bytes each, + e under a 16-bit compute dtype: softmax in
//                  float32 and cast); MLP f for OPT (relu keeps its output
//                  only), 2 f for gelu families, 4 f for LLaMA's gated MLP;
//                  rotary families + 2 d for the rotated q, k. Its
//                  backward holds the larger of its attention's gradients
//                  and its MLP's (the activation's output and input: 2 f
//                  per real token, LLaMA 3 f; + 2 d per position for the
//                  residual stream's gradient in and out)
//   two paths      a batch with no padding computes every position (above);
//                  one with R = ceil(2^18 / d^2) positions or more padded
//                  may skip them (NOTE [Skipped padding]), and holds the
//                  most with exactly R padded, every sequence full but one:
//                  N = B L - R real tokens. Then a decoder layer keeps 3 d
//                  per position (its input, two dropout masks) and 7 d +
//                  MLP (+ 2 d rotary) per real token when the packed
//                  float32 self-attention runs (NOTE [Packed attention]:
//                  OPT, LLaMA, GPT-NeoX; planned for the CPU), with
//                  probabilities per sample (h sum n_b^2) and a backward
//                  that holds dq, dk, dv; with the composite attention
//                  (16-bit compute, MPT) 10 d per position (5 d more: the
//                  gathered real tokens, the linears' 2-D outputs beside
//                  the attention's per-head copies, q's scaled copy) and
//                  2 d + MLP per real token. A gated block's feed-forward
//                  (2 d + 2 mx d) and the head's product run on the real
//                  tokens. The planner walks both paths (NOTE [Step walk])
//                  and keeps the larger peak.
//                  Checked per operator with fsdp_peak_probe --live-at-peak
//                  on OPT (docs/planner.md "Accuracy of the peak")
//   head + loss    ours (HeadLogits::kTargets): inside the head's unit the
//                  product at the targets P V (P counted as the real tokens,
//                  its bound); after it its fp32 cast (16-bit compute) and
//                  the fp32 log-softmax; backward starts with the fp32 loss
//                  and log-softmax gradients and, inside the unit, the logits
//                  gradient. The reference (kEveryPosition): inside the
//                  head's unit the product on the real tokens
//                  N V and its scatter B L V; after it, beside both, the
//                  shifted copy, its fp32 cast (16-bit compute) and the fp32
//                  log-softmax. Backward starts outside every unit with the
//                  fp32 loss and logits gradients, then inside the head's
//                  unit the logits gradient, its real rows and the product
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
#include "backend/protocol/config/config_types.h"

namespace fs::fsdp_plan {

// Bytes of one micro-batch per model region, in forward order, for the planner's step walk
// (NOTE [Step walk] in memory_estimate.h). kept*: held from the region's forward to its backward.
struct ActivationRegions {
  int64_t inputs = 0;            // the batch itself (images, ids, mask), held for the whole step
  int64_t visionWorkingSet = 0;  // one tower block at a time, under no-grad
  int64_t features = 0;          // the tower's output, kept
  int64_t perceiver = 0;         // all Perceiver layers plus its output norm, kept without checkpointing
  int64_t perceiverLayer = 0;    // one Perceiver layer
  int64_t media = 0;             // the Perceiver's output as the LM's media, kept
  int64_t gatedBlock = 0;        // one gated cross-attention block, kept without checkpointing
  int64_t decoderLayer = 0;      // one decoder layer, kept without checkpointing
  int64_t regionInput = 0;       // B L d: what a checkpointed block or layer keeps
  // While a region's backward runs, beside what it keeps: softmax's backward holds the gradient of its
  // output and makes the gradient of its input (each the size of the attention probabilities), and
  // the gradient of the residual stream passes through (B L d in, B L d out).
  int64_t perceiverBackward = 0, gatedBlockBackward = 0, decoderLayerBackward = 0;
  int64_t bias = 0;          // the causal attention bias, the LM's whole forward and backward
  int64_t headForward = 0;   // logits and log-softmax at the end of forward
  int64_t headBackward = 0;  // the loss and logits gradients at the start of backward
  // Inside the head's unit (gathered; a tied head's unit again): in forward the real-token product and
  // its scatter to (B, L); in backward the logits gradient, its real rows and the product kept for them.
  int64_t headInUnitForward = 0, headInUnitBackward = 0;
  int64_t keptWithoutCheckpointing = 0;  // every region's kept bytes together (no bias, no head)
  int64_t keptWithCheckpointing = 0;
};

struct DatasetActivations {
  std::string name;
  int64_t batch = 0;
  int64_t tokens = 0;                // L
  int64_t images = 0;                // T per sample
  int64_t withoutCheckpointing = 0;  // bytes, peak of one forward + backward; the larger path's
  int64_t withCheckpointing = 0;
  // NOTE [Activation formula], two paths: [0] every position computed; [1], when a batch can skip
  // padding, the real tokens only. The step walk takes each and keeps the larger peak.
  std::vector<ActivationRegions> paths;
};

struct ActivationEstimate {
  std::vector<DatasetActivations> datasets;
  int64_t withoutCheckpointing = 0;  // max over datasets
  int64_t withCheckpointing = 0;
};

// Which logits the loss reads from: ours at its targets only (NOTE [Logits at the targets] in
// backend/model/output_head.h; at most one per real token), the reference's at every position.
enum class HeadLogits { kTargets, kEveryPosition };

ActivationEstimate estimateActivations(const protocol::RunConfig& config, Dtype compute,
                                       HeadLogits head = HeadLogits::kTargets);

// The fewest padded positions with which a batch skips its padding (model::paddingFor: padded x width^2
// >= 2^18; param_inventory_test holds the two to the same answer); 0 for a width <= 0.
int64_t paddedPositionsToSkip(int64_t width);

}  // namespace fs::fsdp_plan

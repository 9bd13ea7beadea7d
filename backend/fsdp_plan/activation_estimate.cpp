#include "backend/fsdp_plan/activation_estimate.h"

#include <algorithm>

#include "backend/fsdp_plan/param_inventory.h"

namespace fs::fsdp_plan {
namespace {

// NOTE [Activation formula] for one dataset; returns {without, with} checkpointing in bytes.
DatasetActivations forDataset(const protocol::RunConfig& c, const protocol::DatasetConfig& ds,
                              Dtype compute) {
  const auto& m = c.model;
  const bool mmc4 = ds.type == "mmc4";
  DatasetActivations a;
  a.name = ds.name;
  a.batch = ds.batch_size;
  a.tokens = ds.max_tokens > 0 ? ds.max_tokens : (mmc4 ? 256 : 32);
  a.images = mmc4 ? std::max<int64_t>(ds.max_num_images, 1) : 1;
  const int64_t e = dtypeBytes(compute);
  const int64_t b = a.batch, l = a.tokens, t = a.images;
  const int64_t grid = m.vision.patch_size > 0 ? m.vision.image_size / m.vision.patch_size : 0;
  const int64_t p = grid * grid, dv = m.vision.width;
  const int64_t n = m.perceiver.num_latents, ip = m.perceiver.heads * m.perceiver.head_dim;
  const int64_t d = m.lm.width, f = m.lm.ffn_dim, h = m.lm.heads;
  const int64_t ix = m.cross_attn.heads * m.cross_attn.head_dim, mx = m.cross_attn.ff_mult;
  const int64_t big_m = t * n;
  const int64_t rows = m.tokens.vocab_size > 0 ? m.tokens.vocab_size : m.lm.vocab_size;
  const int64_t images = b * t;
  const int64_t tokens = b * l;

  const int64_t features = images * p * dv;
  const int64_t perceiverLayer =
      images * (p * dv + (p + n) * dv + 2 * (p + n) * ip + 2 * n * ip + 2 * m.perceiver.heads * n * (p + n) +
                6 * n * dv + 2 * m.perceiver.ff_mult * n * dv);
  const int64_t perceiver = m.perceiver.depth * perceiverLayer + images * 2 * n * dv;
  const int64_t media = b * big_m * dv;
  const int64_t gatedBlock =
      tokens * (6 * d + 2 * ix + 2 * mx * d + 2 * m.cross_attn.heads * big_m) + b * 2 * big_m * ix;
  const bool rotary = m.lm.family == "gpt_neox" || m.lm.family == "llama";
  // NOTE [Activation formula], MLP: what each activation's backward keeps. OPT's relu keeps only its
  // output (fc1's output is freed); gelu keeps its input beside its output; LLaMA's silu(gate) * up
  // keeps gate, silu(gate), up and the product.
  const int64_t mlp = m.lm.family == "llama" ? 4 * f : m.lm.family == "opt" ? f : 2 * f;
  // Self-attention keeps only the probabilities (softmax's backward reads its output; the scale and the
  // bias add keep nothing), computed in float32 and cast once more under a 16-bit compute dtype:
  // h L per token of 4 (+ e) bytes, in elements of e. Attention dropout (0 in every family's
  // defaults here) would keep a mask and a second copy.
  const int64_t probs = tokens * h * l * (4 + (e < 4 ? e : 0)) / e;
  // NOTE [Activation formula], skipped padding: once a batch can have enough padding for the model to
  // skip it (model::paddingFor: padded positions x d^2 >= 2^22), a decoder layer keeps 5 d more per
  // token: the real tokens gathered for its linears (index_select), their 2-D outputs beside the
  // attention's per-head copies of the full (B, L) tensors, and q's scaled copy.
  // With padding skipped, OPT / LLaMA / GPT-NeoX self-attention in float32 runs packed (NOTE [Packed
  // attention] in backend/model/packed_attention.h; the planner assumes the CPU, where it runs): packed
  // q, k, v and the attention output are kept instead of the full (B, L) per-head copies, 3 d per token
  // rather than 5 d, and its backward holds dq, dk, dv (3 d per token) instead of two probability-sized
  // tensors.
  const bool maySkipPadding = (tokens - 1) * d * d >= (int64_t{1} << 22);
  const bool packedAttention = maySkipPadding && e == 4 && m.lm.family != "mpt";
  const int64_t skipExtra = maySkipPadding ? (packedAttention ? 3 * d : 5 * d) : 0;
  const int64_t decoderLayer = tokens * (7 * d + skipExtra + mlp + (rotary ? 2 * d : 0)) + probs;
  int64_t blocks = 0;
  for (int64_t i = 0; i < m.lm.layers; ++i)
    blocks += hasCrossAttentionAt(i, m.cross_attn.every_n_layers) ? 1 : 0;
  // NOTE [Activation formula]: the head and loss in forward hold the logits
  // (the real-token product and its scatter), the shifted copy, its fp32 cast
  // under a 16-bit compute dtype and the fp32 log-softmax; after forward only
  // the log-softmax stays. Backward starts with the fp32 loss gradient and the
  // logits gradient (compute dtype, twice through the scatter).
  const int64_t blv = tokens * rows;
  const int64_t logitsForward = blv * (3 * e + (e < 4 ? 4 : 0) + 4);
  const int64_t logitsBackward = blv * (4 + 4 + 2 * e);
  const int64_t bias = b * l * l * e;  // the causal attention bias, held for the whole forward

  const int64_t keptElems = features + perceiver + media + blocks * gatedBlock + m.lm.layers * decoderLayer;
  a.withoutCheckpointing = keptElems * e + bias + std::max(logitsForward, logitsBackward);
  const int64_t inputs = features + media + (blocks + m.lm.layers) * tokens * d;
  const int64_t recompute = std::max({perceiver, gatedBlock, decoderLayer});
  a.withCheckpointing = inputs * e + bias + std::max(logitsForward, logitsBackward + recompute * e);
  // The tower runs first under no-grad: one block's working set at a time.
  const auto hidden =
      static_cast<int64_t>(static_cast<double>(dv) * (m.vision.mlp_ratio > 0 ? m.vision.mlp_ratio : 4.0));
  const int64_t vision =
      images * ((p + 1) * (6 * dv + 2 * hidden) + 2 * m.vision.heads * (p + 1) * (p + 1)) * e;
  a.withoutCheckpointing = std::max(a.withoutCheckpointing, vision);
  a.withCheckpointing = std::max(a.withCheckpointing, vision);

  auto& r = a.regions;
  const int64_t side = m.vision.image_size;
  r.inputs = images * 3 * side * side * 4 + 2 * tokens * 8;  // float32 images, int64 ids and mask
  r.visionWorkingSet = vision;
  r.features = features * e;
  r.perceiver = perceiver * e;
  r.perceiverLayer = perceiverLayer * e;
  r.media = media * e;
  r.gatedBlock = gatedBlock * e;
  r.decoderLayer = decoderLayer * e;
  r.regionInput = tokens * d * e;
  r.perceiverBackward = (2 * images * m.perceiver.heads * n * (p + n) + 2 * images * n * dv) * e;
  r.gatedBlockBackward = (2 * tokens * m.cross_attn.heads * big_m + 2 * tokens * d) * e;
  r.decoderLayerBackward = packedAttention ? 3 * tokens * d * e : 2 * probs * e + 2 * tokens * d * e;
  r.bias = bias;
  r.headForward = logitsForward;
  r.headBackward = logitsBackward;
  r.keptWithoutCheckpointing = keptElems * e;
  r.keptWithCheckpointing = inputs * e;
  return a;
}

}  // namespace

ActivationEstimate estimateActivations(const protocol::RunConfig& config, Dtype compute) {
  ActivationEstimate est;
  for (const auto& ds : config.data.datasets) {
    est.datasets.push_back(forDataset(config, ds, compute));
    est.withoutCheckpointing = std::max(est.withoutCheckpointing, est.datasets.back().withoutCheckpointing);
    est.withCheckpointing = std::max(est.withCheckpointing, est.datasets.back().withCheckpointing);
  }
  return est;
}

}  // namespace fs::fsdp_plan

#include "backend/fsdp_plan/activation_estimate.h"

#include <algorithm>

#include "backend/fsdp_plan/param_inventory.h"

namespace fs::fsdp_plan {
namespace {

// The model's two ways through a batch (NOTE [Skipped padding] in backend/model/common.h): every position
// computed, or the token-wise work on the `real` tokens only, which needs at least ceil(2^18 / d^2) of
// the B L positions to be padding.
struct Path {
  bool skip = false;
  int64_t real = 0;  // positions the token-wise work runs on
};

// The largest sum of squared sequence lengths of `real` tokens in sequences of at most `length`: every
// sequence full but one. Packed attention keeps heads x that many probabilities.
int64_t squaredLengths(int64_t real, int64_t length) {
  const int64_t full = real / length, rest = real % length;
  return full * length * length + rest * rest;
}

// NOTE [Activation formula] for one dataset along one path.
DatasetActivations forPath(const protocol::RunConfig& c, const protocol::DatasetConfig& ds, Dtype compute,
                           Path path, HeadLogits head) {
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
  const int64_t real = path.skip ? path.real : tokens;

  const int64_t features = images * p * dv;
  const int64_t perceiverLayer =
      images * (p * dv + (p + n) * dv + 2 * (p + n) * ip + 2 * n * ip + 2 * m.perceiver.heads * n * (p + n) +
                6 * n * dv + 2 * m.perceiver.ff_mult * n * dv);
  const int64_t perceiver = m.perceiver.depth * perceiverLayer + images * 2 * n * dv;
  const int64_t media = b * big_m * dv;
  // A gated block's feed-forward (its packed input, norm, and the two mx d wide activations) runs on
  // the real tokens, and so do the cross-attention's norm (input and output) and to_out's input (NOTE
  // [Attending tokens] in backend/model/gated_cross_attention.h; at most every real token attends); q,
  // the probabilities and the two gates' inputs stay (B, L).
  const int64_t gatedBlock = tokens * (2 * d + ix + 2 * m.cross_attn.heads * big_m) + real * (2 * d + ix) +
                             real * (2 * d + 2 * mx * d) + b * 2 * big_m * ix;
  const bool rotary = m.lm.family == "gpt_neox" || m.lm.family == "llama";
  // NOTE [Activation formula], MLP: what each activation's backward keeps. OPT's relu keeps only its
  // output (fc1's output is freed); gelu keeps its input beside its output; LLaMA's silu(gate) * up
  // keeps gate, silu(gate), up and the product.
  const int64_t mlp = m.lm.family == "llama" ? 4 * f : m.lm.family == "opt" ? f : 2 * f;
  // NOTE [Activation formula], decoder layer. Every position computed: 7 d + MLP per token and the
  // (B, H, L, L) probabilities, float32 and cast once more under a 16-bit compute dtype (h L per token
  // of 4 (+ e) bytes, in elements of e; attention dropout, 0 in every family's defaults here, would keep
  // a mask and a second copy). Padding skipped, with the packed float32 self-attention (NOTE [Packed
  // attention]: OPT, LLaMA, GPT-NeoX; the planner assumes the CPU, where it runs): the layer's input and
  // the two dropout masks stay (B, L) (3 d); the attention's packed input, q, k, v and output, the MLP's
  // packed input and norm, the MLP and the rotated q, k are on the real tokens (7 d + MLP), and the
  // probabilities are per sample, n_b^2 per head. Padding skipped with the composite attention (16-bit
  // compute, MPT): 5 d more per token than computing everything (the gathered real tokens, the linears'
  // 2-D outputs beside the attention's full-size per-head copies, q's scaled copy); only the MLP part
  // (2 d + MLP) is counted on the real tokens.
  const int64_t fullProbs = tokens * h * l * (4 + (e < 4 ? e : 0)) / e;
  const bool packedAttention = path.skip && e == 4 && m.lm.family != "mpt";
  const int64_t rotated = rotary ? 2 * d : 0;
  int64_t decoderLayer = 0;
  if (!path.skip) {
    decoderLayer = tokens * (7 * d + mlp + rotated) + fullProbs;
  } else if (packedAttention) {
    decoderLayer = tokens * 3 * d + real * (7 * d + mlp + rotated) + h * squaredLengths(real, l);
  } else {
    decoderLayer = tokens * (10 * d + rotated) + real * (2 * d + mlp) + fullProbs;
  }
  int64_t blocks = 0;
  for (int64_t i = 0; i < m.lm.layers; ++i)
    blocks += hasCrossAttentionAt(i, m.cross_attn.every_n_layers) ? 1 : 0;
  // NOTE [Activation formula]: the head and loss in forward hold the logits
  // (the real-token product and its scatter), the shifted copy, its fp32 cast
  // under a 16-bit compute dtype and the fp32 log-softmax; after forward only
  // the log-softmax stays. Backward starts with the fp32 loss gradient and the
  // logits gradient (compute dtype, twice through the scatter).
  // Ours (NOTE [Logits at the targets]): the product at the targets, at most one per real token, its
  // fp32 cast and log-softmax; backward the fp32 loss and log-softmax gradients and the cast back.
  const bool everyPosition = head == HeadLogits::kEveryPosition;
  const int64_t blv = tokens * rows;
  const int64_t product = real * rows * e;
  const int64_t logitsForward = everyPosition ? product + blv * (2 * e + (e < 4 ? 4 : 0) + 4)
                                              : product + real * rows * ((e < 4 ? 4 : 0) + 4);
  const int64_t logitsBackward =
      everyPosition ? blv * (4 + 4 + 2 * e) : real * rows * (4 + 4 + (e < 4 ? e : 0));
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

  auto& r = a.paths.emplace_back();
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
  // A decoder layer's backward starts at its MLP, with the whole layer kept (or recomputed): the gradients
  // of the activation's output and input (2 f per real token; LLaMA's gate, up and silu 3 f) beside the
  // residual stream's gradient in and out; then its attention's. Measured per operator on OPT with
  // checkpointing (fsdp_peak_probe --live-at-peak: relu's two gradients beside the recomputed layer).
  // A gated block's feed-forward does the same, but the walk holds its unit's whole gradient there,
  // which covers it (docs/planner.md, "Accuracy of the peak").
  const int64_t mlpBackward = real * (m.lm.family == "llama" ? 3 * f : 2 * f) + 2 * tokens * d;
  const int64_t attentionBackward = packedAttention ? 3 * real * d : 2 * fullProbs + 2 * tokens * d;
  r.decoderLayerBackward = std::max(attentionBackward, mlpBackward) * e;
  r.bias = bias;
  r.headForward = logitsForward;
  r.headBackward = logitsBackward;
  r.headInUnitForward = everyPosition ? product + blv * e : product;
  r.headInUnitBackward = everyPosition ? blv * e + 2 * product : product;
  r.keptWithoutCheckpointing = keptElems * e;
  r.keptWithCheckpointing = inputs * e;
  return a;
}

// NOTE [Activation formula], two paths: a batch with no padding computes every position; one with at
// least ceil(2^18 / d^2) padded positions (model::paddingFor) may skip them, and then the most it holds
// is with exactly that many padded and every sequence full but one. Either can come: the planner walks
// both (the skipping path keeps more per real token, the other more tokens).
DatasetActivations forDataset(const protocol::RunConfig& c, const protocol::DatasetConfig& ds, Dtype compute,
                              HeadLogits head) {
  auto a = forPath(c, ds, compute, Path{}, head);
  const int64_t tokens = a.batch * a.tokens;
  const int64_t padded = paddedPositionsToSkip(c.model.lm.width);
  if (padded <= 0 || padded >= tokens) return a;  // a batch cannot skip padding and keep a real token
  const auto s = forPath(c, ds, compute, Path{true, tokens - padded}, head);
  a.withoutCheckpointing = std::max(a.withoutCheckpointing, s.withoutCheckpointing);
  a.withCheckpointing = std::max(a.withCheckpointing, s.withCheckpointing);
  a.paths.push_back(s.paths.front());
  return a;
}

}  // namespace

int64_t paddedPositionsToSkip(int64_t width) {
  if (width <= 0) return 0;
  constexpr int64_t kSkipFrom = int64_t{1} << 18;  // padded positions x width^2, model::paddingFor
  return (kSkipFrom + width * width - 1) / (width * width);
}

ActivationEstimate estimateActivations(const protocol::RunConfig& config, Dtype compute, HeadLogits head) {
  ActivationEstimate est;
  for (const auto& ds : config.data.datasets) {
    est.datasets.push_back(forDataset(config, ds, compute, head));
    est.withoutCheckpointing = std::max(est.withoutCheckpointing, est.datasets.back().withoutCheckpointing);
    est.withCheckpointing = std::max(est.withCheckpointing, est.datasets.back().withCheckpointing);
  }
  return est;
}

}  // namespace fs::fsdp_plan

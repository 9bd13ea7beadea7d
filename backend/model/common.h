// Building blocks shared by the vision tower, the resampler, the gated
// cross-attention and the LM families: norms, Flamingo's feed-forward,
// multi-head attention arithmetic, attention masks, rotary embeddings, init.
//
// Thread-safety: modules follow LibTorch (one forward at a time per module
// instance); the free functions are pure.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <string>

namespace fs::model {

// ---------------------------------------------------------------- norms

struct NormOptions {
  explicit NormOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(double, eps) = 1e-5;
  // LayerNorm with a bias parameter (MPT's LayerNorms have none: `no_bias`).
  TORCH_ARG(bool, bias) = true;
  // RMSNorm as LLaMA: x * rsqrt(mean(x^2) + eps) * weight, computed in fp32; no bias.
  TORCH_ARG(bool, rms) = false;
};

// LayerNorm / RMSNorm registering `weight` and (LayerNorm with bias) `bias`,
// the names every checkpoint uses. weight = 1, bias = 0 at construction.
// An input whose dtype differs from the weight's (autocast) is normalised in
// fp32 and the result stays fp32, as under CUDA autocast.
class NormImpl : public torch::nn::Module {
 public:
  explicit NormImpl(NormOptions options);
  torch::Tensor forward(const torch::Tensor& x);

  NormOptions options;
  torch::Tensor weight;
  torch::Tensor bias;  // undefined without bias
};
TORCH_MODULE(Norm);

// ---------------------------------------------------------------- feed-forward

// Flamingo's FeedForward (perceiver and gated cross-attention):
// Sequential(LayerNorm(dim), Linear(dim, mult*dim, no bias), GELU (erf),
// Linear(mult*dim, dim, no bias)), parameters `0.weight`, `0.bias`,
// `1.weight`, `3.weight` (index 2 is the parameterless GELU).
// Init: LayerNorm (1, 0), Linear as PyTorch's default (kaiming-uniform).
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t dim, int64_t mult);
  torch::Tensor forward(const torch::Tensor& x);

  Norm norm{nullptr};
  torch::nn::Linear up{nullptr};
  torch::nn::Linear down{nullptr};
};
TORCH_MODULE(FeedForward);

// A Linear without bias (LLaMA's and MPT's projections).
torch::nn::Linear noBiasLinear(int64_t in, int64_t out);

// ---------------------------------------------------------------- attention arithmetic

// (B, L, H*D) -> (B, H, L, D).
torch::Tensor splitHeads(const torch::Tensor& x, int64_t heads);
// (B, H, L, D) -> (B, L, H*D).
torch::Tensor mergeHeads(const torch::Tensor& x);

// softmax(q k^T * scale + bias) v, dropout on the probabilities when training.
// q (B, H, Lq, D), k and v (B, H, Lk, D); bias additive, broadcastable to
// (B, H, Lq, Lk), or undefined. The softmax runs in fp32 for half inputs.
torch::Tensor scaledDotAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 double scale, const torch::Tensor& bias, double dropout, bool training);

// NOTE [Skipped padding]: a position whose attention_mask is 0 is never a key
// of a real position (the bias masks it; attention is causal) and, when it
// holds the pad id, its label is -100, so nothing it computes reaches a real
// position or the loss. Token-wise work (MLPs, their norms, the head) may
// then run on the real tokens only: `real_tokens` lists them as flat indices
// into the leading (B, L) positions, and skipped positions get zeros. Only the
// values at padding differ from computing everything; real positions get the
// same numbers up to float summation order. Right-padded OpenFlamingo batches
// are ~35 % padding.
//
// Whether a forward may skip the work on padding. With kSkip the caller
// vouches that every masked position holds the pad id.
enum class Padding { kCompute, kSkip };

// The padding policy for one batch: kSkip when every masked position holds
// `pad_id` (so the label rules make it -100) and skipping pays. `dead`
// (B, L) bool, optional: positions the caller vouches nothing it reads
// depends on (NOTE [Dead positions] in backend/step/labels.h); they count
// as skipped work, and the caller masks them out when the answer is kSkip.
// NOTE [When skipping pays]: gathering and scattering cost a few extra ops
// per layer, about the same whatever the width (~0.5 ms a step on the tiny
// preset, 7 % slower), while the work saved grows with padding x width^2:
// each padded position skips ~6 width^2 multiply-adds per layer forward and
// as many backward. It skips from 2^18 padded positions x width^2: never on
// the tiny preset (width 32, at most 96 positions a batch); width 128 from 16
// padded positions, where a padded position saves ~8 us of a layer's
// forward and backward against ~60 us of gathering per layer (a LAION batch
// of 8 x 32 tokens is ~40 % padding). 2^22 until issue 27: it left the
// LAION batches of a width-128 model computing their padding. The same rule
// decides whether unreferenced media slots are left out (work: patches x
// vision width^2 per image; never on tiny, always on small) and whether the
// cross-attention packs its attending tokens (work: width x heads x
// head_dim per position; never on tiny, from 4 positions on compare).
//
// Whether leaving out `skipped` items (positions, images) pays: skipped x
// work_per_item >= 2^18, work_per_item being the multiply-adds of one
// width x width product for one item (width^2 for a position of the LM).
// NOTE [When skipping pays]; the same rule for padding, media slots and the
// cross-attention's attending tokens.
bool skippingPays(int64_t skipped, int64_t work_per_item);
Padding paddingFor(const torch::Tensor& input_ids, const torch::Tensor& attention_mask, int64_t pad_id,
                   int64_t width, const torch::Tensor& dead = {});
// NOTE [Index sets from the host]: the index sets a forward leaves work out
// with (the real tokens of skipped padding, the referenced media slots, the
// cross-attention's attending tokens) are picked from token values: on a GPU
// each pick would read a count back from the device. They depend on
// input_ids and the mask only, so the trainer computes them on the host batch
// (Flamingo::indexSets) and copies them with it; given to the forward, they
// replace the model's own picks (same values, so the same numbers). Undefined
// tensors keep their meaning: every position / every slot.
struct IndexSets {
  torch::Tensor realTokens;  // realTokenIndex of the mask with Padding::kSkip, else undefined
  torch::Tensor slots;       // referenced media slots (NOTE [Unreferenced media slots] in flamingo.cpp)
  torch::Tensor attending;   // attendingTokens (NOTE [Attending tokens] in gated_cross_attention.h)
  // The caller saw no zero in attention_mask (false: padding, or not looked
  // at): the LM's self-attention may then use the causal mask alone on a
  // device where looking would be a host sync (NOTE [Fused self-attention]
  // in lm_family.h).
  bool unpadded = false;
};

// The flat indices of the positions where attention_mask is 1; undefined when
// there is no padding (nothing to skip).
torch::Tensor realTokenIndex(const torch::Tensor& attention_mask);
// (B, L, ...) -> (N, ...): the real tokens in sample order; every position
// (N = B L) when real_tokens is undefined. The packed layout of NOTE [Packed
// attention] in packed_attention.h.
torch::Tensor packTokens(const torch::Tensor& x, const torch::Tensor& real_tokens);
// The inverse: (N, ...) -> (B, L, ...), zeros at skipped positions.
torch::Tensor unpackTokens(const torch::Tensor& y, const torch::Tensor& real_tokens, int64_t b, int64_t l);
// unpackTokens(f(packTokens(x))): f over the real tokens only. f must be token-wise.
torch::Tensor onRealTokens(const torch::Tensor& x, const torch::Tensor& real_tokens,
                           const std::function<torch::Tensor(const torch::Tensor&)>& f);

// The most negative finite value of a floating dtype (-finfo(dtype).max):
// the value masked logits get, so a fully masked row stays finite (uniform).
double lowestFinite(c10::ScalarType dtype);

// NOTE [Causal mask]: every LM family masks attention the same way for
// training: query i sees key j iff j <= i and attention_mask[b, j] != 0
// (right padding). Masked logits are set to lowestFinite(dtype), as Hugging
// Face's additive masks do after their clamp, so softmax gives them exactly 0
// and a row with no visible key (an all-padding sequence) is uniform, not NaN.
//
// Returns the additive bias (B, 1, L, L) in `dtype`: `allowed` (0 or a
// per-head bias such as ALiBi, broadcastable to (1, H, 1|L, L)) where visible,
// lowestFinite(dtype) elsewhere (then (B, H|1, L, L)).
torch::Tensor causalAttentionBias(const torch::Tensor& attention_mask, c10::ScalarType dtype,
                                  const torch::Tensor& allowed = {});

// ---------------------------------------------------------------- rotary

// Rotary tables in Hugging Face's rotate-half layout (GPT-NeoX, LLaMA):
// inv_freq = base^(-arange(0, rot_dim, 2) / rot_dim), angles = position *
// inv_freq (fp32), cos/sin of cat(angles, angles); shapes (B, 1, L, rot_dim).
struct RotaryTables {
  torch::Tensor cos;
  torch::Tensor sin;
};
RotaryTables rotaryTables(const torch::Tensor& positions, int64_t rot_dim, double base,
                          c10::ScalarType dtype);

// Rotates the first rot_dim channels of x (B, H, L, D) by the tables; the
// other D - rot_dim channels pass through (GPT-NeoX rotary_pct < 1).
torch::Tensor applyRotary(const torch::Tensor& x, const RotaryTables& tables);

// ---------------------------------------------------------------- init

// In place, without autograd: N(0, std) / zero / ones, on defined tensors only.
void initNormal(torch::Tensor& t, double std);
void initZeros(torch::Tensor& t);

// Registers `module` under a dotted path, creating plain container modules for
// the intermediate names ("model.decoder.layers" -> model -> decoder ->
// layers), so a family can reproduce Hugging Face's nesting with flat
// members. Registration order decides named_parameters() order.
torch::nn::Module& containerAt(torch::nn::Module& root, const std::string& dotted_path);

}  // namespace fs::model

// Flamingo's Perceiver resampler: a fixed set of learned latents attends to
// each image's patch tokens (and to themselves), giving num_latents visual
// tokens per image for the gated cross-attention.
//
// Parameters (OpenFlamingo's names under `perceiver.`): latents,
// layers.{i}.0.{norm_media, norm_latents, to_q, to_kv, to_out},
// layers.{i}.1.{0, 1, 3} (FeedForward), norm. No media-time or frame
// embeddings: OpenFlamingo constructs the resampler without them.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "backend/model/common.h"
#include "backend/model/unit_hooks.h"

namespace fs::protocol {
struct PerceiverConfig;
}

namespace fs::model {

struct PerceiverOptions {
  explicit PerceiverOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);  // = the vision width (d_vis)
  TORCH_ARG(int64_t, depth) = 6;
  TORCH_ARG(int64_t, heads) = 8;
  TORCH_ARG(int64_t, head_dim) = 64;
  TORCH_ARG(int64_t, num_latents) = 64;
  TORCH_ARG(int64_t, ff_mult) = 4;

 public:
  static PerceiverOptions fromConfig(int64_t vision_width, const protocol::PerceiverConfig& config);
};

// Latents attend to [media; latents]: q from the normed latents, k and v from
// one Linear (k then v) over the concatenation on the token axis, no biases,
// q scaled by head_dim^-0.5, row max subtracted (detached) before softmax.
//
// NOTE [Fused resampler attention]: forward() picks the path per call (NOTE
// [Fused attention] in fused_attention.h). Every latent sees every media
// token and every latent, so there is no mask: on CUDA SDPA may pick flash
// attention (bf16 / fp16; memory-efficient for fp32, which flash does not
// take), per (image, head) over n1 + n2 keys. Subtracting the row max is
// what every softmax kernel does inside, so the fused path computes the same
// function; on the CPU the composite above, as before.
class PerceiverAttentionImpl : public torch::nn::Module {
 public:
  PerceiverAttentionImpl(int64_t dim, int64_t heads, int64_t head_dim);
  // media (B, T, n1, D), latents (B, T, n2, D) -> (B, T, n2, D)
  torch::Tensor forward(const torch::Tensor& media, const torch::Tensor& latents);

  int64_t heads;
  int64_t head_dim;
  Norm norm_media{nullptr};
  Norm norm_latents{nullptr};
  torch::nn::Linear to_q{nullptr};
  torch::nn::Linear to_kv{nullptr};
  torch::nn::Linear to_out{nullptr};
};
TORCH_MODULE(PerceiverAttention);

// One `layers.{i}` entry: `0` attention, `1` feed-forward (both residual).
class PerceiverLayerImpl : public torch::nn::Module {
 public:
  explicit PerceiverLayerImpl(const PerceiverOptions& options);
  torch::Tensor forward(const torch::Tensor& media, const torch::Tensor& latents);

  PerceiverAttention attn{nullptr};
  FeedForward ff{nullptr};
};
TORCH_MODULE(PerceiverLayer);

class PerceiverResamplerImpl : public torch::nn::Module {
 public:
  explicit PerceiverResamplerImpl(PerceiverOptions options);

  // features (B, T, F, v, D) -> (B, T, num_latents, D). The F frames are
  // flattened into the token axis (OpenFlamingo uses F = 1).
  torch::Tensor forward(const torch::Tensor& features);

  PerceiverOptions options;
  torch::Tensor latents;  // (num_latents, D) ~ N(0, 1)
  torch::nn::ModuleList layers{nullptr};
  Norm norm{nullptr};
  std::shared_ptr<UnitHooks> hooks;  // NOTE [Unit hooks]: around every layer
};
TORCH_MODULE(PerceiverResampler);

}  // namespace fs::model

// The OpenCLIP ViT visual tower (open_clip's VisionTransformer), returning the
// patch tokens Flamingo's resampler reads.
//
// Parameter names are OpenCLIP's visual names, in its registration order
// (own parameters first, as PyTorch lists them): class_embedding,
// positional_embedding, proj, conv1.weight, ln_pre.*,
// transformer.resblocks.{i}.{ln_1, attn.in_proj_weight, attn.in_proj_bias,
// attn.out_proj, ln_2, mlp.c_fc, mlp.c_proj}.*, ln_post.*. OpenFlamingo keeps
// the tower as `vision_encoder = clip_model.visual`, so its state dict says
// `vision_encoder.conv1.weight` (no `visual.`); an OpenCLIP checkpoint says
// `visual.conv1.weight`.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "backend/model/common.h"
#include "backend/model/unit_hooks.h"

namespace fs::protocol {
struct VisionConfig;
}

namespace fs::model {

struct VisionEncoderOptions {
  TORCH_ARG(int64_t, image_size) = 224;
  TORCH_ARG(int64_t, patch_size) = 14;
  TORCH_ARG(int64_t, width) = 1024;
  TORCH_ARG(int64_t, layers) = 24;
  TORCH_ARG(int64_t, heads) = 16;
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(int64_t, output_dim) = 768;
  // x * sigmoid(1.702 x) (OpenAI weights) instead of erf GELU.
  TORCH_ARG(bool, quick_gelu) = true;
  // open_clip >= 2.23 applies ln_post to the tokens; the released models did not.
  TORCH_ARG(bool, ln_post_on_tokens) = false;

 public:
  static VisionEncoderOptions fromConfig(const protocol::VisionConfig& config);
  int64_t gridSize() const { return image_size_ / patch_size_; }
  int64_t numPatches() const { return gridSize() * gridSize(); }
};

// nn.MultiheadAttention's parameters (fused in-projection) and math.
class VisionAttentionImpl : public torch::nn::Module {
 public:
  VisionAttentionImpl(int64_t width, int64_t heads);
  torch::Tensor forward(const torch::Tensor& x);  // (N, L, W) -> (N, L, W)

  int64_t heads;
  torch::Tensor in_proj_weight;  // (3W, W): q, k, v rows
  torch::Tensor in_proj_bias;    // (3W)
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(VisionAttention);

class VisionMlpImpl : public torch::nn::Module {
 public:
  VisionMlpImpl(int64_t width, int64_t hidden, bool quick_gelu);
  torch::Tensor forward(const torch::Tensor& x);

  bool quick_gelu;
  torch::nn::Linear c_fc{nullptr};
  torch::nn::Linear c_proj{nullptr};
};
TORCH_MODULE(VisionMlp);

// Pre-LN residual block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class ResidualAttentionBlockImpl : public torch::nn::Module {
 public:
  explicit ResidualAttentionBlockImpl(const VisionEncoderOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  Norm ln_1{nullptr};
  VisionAttention attn{nullptr};
  Norm ln_2{nullptr};
  VisionMlp mlp{nullptr};
};
TORCH_MODULE(ResidualAttentionBlock);

class VisionEncoderImpl : public torch::nn::Module {
 public:
  explicit VisionEncoderImpl(VisionEncoderOptions options);

  // images (N, C, H, W) with H = W = image_size -> patch tokens
  // (N, grid^2, width): the final residual stream without the class token,
  // without proj, and through ln_post only when ln_post_on_tokens.
  torch::Tensor forward(const torch::Tensor& images);

  // Both outputs of open_clip's VisionTransformer with output_tokens:
  // forward()'s tokens, and the pooled embedding ln_post(class token) @ proj
  // (N, output_dim) that CLIP scores images with (Flamingo never reads it).
  struct Outputs {
    torch::Tensor tokens;
    torch::Tensor pooled;
  };
  Outputs encode(const torch::Tensor& images);

  VisionEncoderOptions options;
  torch::Tensor class_embedding;       // (W)
  torch::Tensor positional_embedding;  // (grid^2 + 1, W)
  torch::Tensor proj;                  // (W, output_dim): encode()'s pooled output only
  torch::nn::Conv2d conv1{nullptr};
  Norm ln_pre{nullptr};
  torch::nn::ModuleList resblocks{nullptr};  // registered as transformer.resblocks
  Norm ln_post{nullptr};
  std::shared_ptr<UnitHooks> hooks;  // NOTE [Unit hooks]: around every residual block

 private:
  // The final residual stream (N, 1 + grid^2, W), class token first.
  torch::Tensor residualStream(const torch::Tensor& images);
};
TORCH_MODULE(VisionEncoder);

}  // namespace fs::model

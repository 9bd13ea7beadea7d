#include "backend/model/vision_encoder.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/protocol/config/config_types.h"

namespace fs::model {

VisionEncoderOptions VisionEncoderOptions::fromConfig(const protocol::VisionConfig& c) {
  return VisionEncoderOptions()
      .image_size(c.image_size)
      .patch_size(c.patch_size)
      .width(c.width)
      .layers(c.layers)
      .heads(c.heads)
      .mlp_ratio(c.mlp_ratio > 0 ? c.mlp_ratio : 4.0)
      .output_dim(c.output_dim)
      .quick_gelu(c.quick_gelu)
      .ln_post_on_tokens(c.ln_post_on_tokens);
}

// ---------------------------------------------------------------- attention

VisionAttentionImpl::VisionAttentionImpl(int64_t width, int64_t heads_) : heads(heads_) {
  TORCH_CHECK(width % heads == 0, "VisionAttention: width ", width, " is not divisible by heads ", heads);
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * width, width}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * width}));
  out_proj = register_module("out_proj", torch::nn::Linear(width, width));
  // nn.MultiheadAttention._reset_parameters: xavier-uniform in-projection, zero biases.
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  out_proj->bias.zero_();
}

torch::Tensor VisionAttentionImpl::forward(const torch::Tensor& x) {
  const auto qkv = torch::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
  const auto q = splitHeads(qkv[0], heads);
  const auto k = splitHeads(qkv[1], heads);
  const auto v = splitHeads(qkv[2], heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  return out_proj->forward(mergeHeads(scaledDotAttention(q, k, v, scale, {}, 0.0, false)));
}

// ---------------------------------------------------------------- mlp

VisionMlpImpl::VisionMlpImpl(int64_t width, int64_t hidden, bool quick_gelu_) : quick_gelu(quick_gelu_) {
  c_fc = register_module("c_fc", torch::nn::Linear(width, hidden));
  c_proj = register_module("c_proj", torch::nn::Linear(hidden, width));
}

torch::Tensor VisionMlpImpl::forward(const torch::Tensor& x) {
  auto h = c_fc->forward(x);
  h = quick_gelu ? h * torch::sigmoid(1.702 * h) : torch::gelu(h);
  return c_proj->forward(h);
}

// ---------------------------------------------------------------- block

ResidualAttentionBlockImpl::ResidualAttentionBlockImpl(const VisionEncoderOptions& o) {
  const auto hidden = static_cast<int64_t>(static_cast<double>(o.width()) * o.mlp_ratio());
  ln_1 = register_module("ln_1", Norm(NormOptions(o.width())));
  attn = register_module("attn", VisionAttention(o.width(), o.heads()));
  ln_2 = register_module("ln_2", Norm(NormOptions(o.width())));
  mlp = register_module("mlp", VisionMlp(o.width(), hidden, o.quick_gelu()));
}

torch::Tensor ResidualAttentionBlockImpl::forward(const torch::Tensor& x) {
  auto h = x + attn->forward(ln_1->forward(x));
  return h + mlp->forward(ln_2->forward(h));
}

// ---------------------------------------------------------------- tower

VisionEncoderImpl::VisionEncoderImpl(VisionEncoderOptions opts) : options(std::move(opts)) {
  const auto& o = options;
  TORCH_CHECK(o.image_size() % o.patch_size() == 0, "VisionEncoder: image_size ", o.image_size(),
              " is not a multiple of patch_size ", o.patch_size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(o.width()));
  // open_clip's order: own parameters (listed first by named_parameters), then children. Scaled in place:
  // a parameter must be a factory's tensor (NOTE [Shapes-only construction], shapes_only.h).
  class_embedding = register_parameter("class_embedding", torch::randn({o.width()}).mul_(scale));
  positional_embedding =
      register_parameter("positional_embedding", torch::randn({o.numPatches() + 1, o.width()}).mul_(scale));
  proj = register_parameter("proj", torch::randn({o.width(), o.output_dim()}).mul_(scale));
  conv1 = register_module(
      "conv1",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(3, o.width(), o.patch_size()).stride(o.patch_size()).bias(false)));
  ln_pre = register_module("ln_pre", Norm(NormOptions(o.width())));
  resblocks = torch::nn::ModuleList();
  for (int64_t i = 0; i < o.layers(); ++i) resblocks->push_back(ResidualAttentionBlock(o));
  containerAt(*this, "transformer").register_module("resblocks", resblocks);
  ln_post = register_module("ln_post", Norm(NormOptions(o.width())));
}

torch::Tensor VisionEncoderImpl::residualStream(const torch::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 3, "VisionEncoder: expected images (N, 3, H, W), got ",
              images.sizes());
  const auto n = images.size(0);
  auto x = conv1->forward(images);                       // (N, W, g, g)
  x = x.reshape({n, x.size(1), -1}).permute({0, 2, 1});  // (N, g*g, W)
  const auto cls = class_embedding.to(x.scalar_type()).view({1, 1, -1}).expand({n, 1, x.size(2)});
  x = torch::cat({cls, x}, 1);
  x = x + positional_embedding.to(x.scalar_type());
  x = ln_pre->forward(x);
  for (const auto& block : *resblocks) {
    auto* b = block->as<ResidualAttentionBlockImpl>();
    x = runUnit(hooks, *b, x, [&] { return b->forward(x); });
  }
  return x;
}

torch::Tensor VisionEncoderImpl::forward(const torch::Tensor& images) {
  const auto x = residualStream(images);
  auto tokens = x.narrow(1, 1, x.size(1) - 1);
  if (options.ln_post_on_tokens()) tokens = ln_post->forward(tokens);
  return tokens;
}

VisionEncoderImpl::Outputs VisionEncoderImpl::encode(const torch::Tensor& images) {
  const auto x = residualStream(images);
  Outputs out;
  out.tokens = x.narrow(1, 1, x.size(1) - 1);
  if (options.ln_post_on_tokens()) out.tokens = ln_post->forward(out.tokens);
  out.pooled = torch::matmul(ln_post->forward(x.select(1, 0)), proj.to(x.scalar_type()));
  return out;
}

}  // namespace fs::model

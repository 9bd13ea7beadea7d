#include "backend/model/perceiver.h"

#include <torch/torch.h>

#include <cmath>

#include "backend/model/fused_attention.h"
#include "backend/protocol/config/config_types.h"

namespace fs::model {

PerceiverOptions PerceiverOptions::fromConfig(int64_t vision_width, const protocol::PerceiverConfig& c) {
  return PerceiverOptions(vision_width)
      .depth(c.depth)
      .heads(c.heads)
      .head_dim(c.head_dim)
      .num_latents(c.num_latents)
      .ff_mult(c.ff_mult);
}

PerceiverAttentionImpl::PerceiverAttentionImpl(int64_t dim, int64_t heads_, int64_t head_dim_)
    : heads(heads_), head_dim(head_dim_) {
  const int64_t inner = heads * head_dim;
  norm_media = register_module("norm_media", Norm(NormOptions(dim)));
  norm_latents = register_module("norm_latents", Norm(NormOptions(dim)));
  to_q = register_module("to_q", torch::nn::Linear(torch::nn::LinearOptions(dim, inner).bias(false)));
  to_kv = register_module("to_kv", torch::nn::Linear(torch::nn::LinearOptions(dim, 2 * inner).bias(false)));
  to_out = register_module("to_out", torch::nn::Linear(torch::nn::LinearOptions(inner, dim).bias(false)));
}

namespace {
// (B, T, n, H*d) -> (B, H, T, n, d)
torch::Tensor toHeads(const torch::Tensor& x, int64_t heads) {
  const auto s = x.sizes();
  return x.view({s[0], s[1], s[2], heads, s[3] / heads}).permute({0, 3, 1, 2, 4});
}
}  // namespace

torch::Tensor PerceiverAttentionImpl::forward(const torch::Tensor& media, const torch::Tensor& latents_in) {
  const auto x = norm_media->forward(media);
  const auto lat = norm_latents->forward(latents_in);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const auto q_rows = to_q->forward(lat);                                 // (B, T, n2, H*d)
  const auto kv = to_kv->forward(torch::cat({x, lat}, -2)).chunk(2, -1);  // (B, T, n1 + n2, H*d) each
  const auto s = q_rows.sizes();
  if (runsOnSdpa(AttentionKind::kResampler, q_rows)) {
    // NOTE [Fused resampler attention]: (B T, H, n, d), no mask.
    const auto fold = [&](const torch::Tensor& t) {
      return t.reshape({s[0] * s[1], t.size(2), heads, head_dim}).transpose(1, 2);
    };
    const auto out = sdpaAttention(AttentionKind::kResampler, fold(q_rows), fold(kv[0]), fold(kv[1]), {},
                                   false, scale, 0.0);  // (B T, H, n2, d)
    return to_out->forward(out.transpose(1, 2).reshape({s[0], s[1], s[2], heads * head_dim}));
  }
  const auto q = toHeads(q_rows, heads) * scale;
  const auto k = toHeads(kv[0], heads);
  const auto v = toHeads(kv[1], heads);
  auto sim = torch::matmul(q, k.transpose(-2, -1));
  sim = sim - std::get<0>(sim.max(-1, /*keepdim=*/true)).detach();
  const auto out = torch::matmul(sim.softmax(-1), v);  // (B, H, T, n2, d)
  const auto o = out.sizes();
  return to_out->forward(out.permute({0, 2, 3, 1, 4}).reshape({o[0], o[2], o[3], o[1] * o[4]}));
}

PerceiverLayerImpl::PerceiverLayerImpl(const PerceiverOptions& o) {
  attn = register_module("0", PerceiverAttention(o.dim(), o.heads(), o.head_dim()));
  ff = register_module("1", FeedForward(o.dim(), o.ff_mult()));
}

torch::Tensor PerceiverLayerImpl::forward(const torch::Tensor& media, const torch::Tensor& latents) {
  auto h = attn->forward(media, latents) + latents;
  return ff->forward(h) + h;
}

PerceiverResamplerImpl::PerceiverResamplerImpl(PerceiverOptions opts) : options(std::move(opts)) {
  latents = register_parameter("latents", torch::randn({options.num_latents(), options.dim()}));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.depth(); ++i) layers->push_back(PerceiverLayer(options));
  norm = register_module("norm", Norm(NormOptions(options.dim())));
}

torch::Tensor PerceiverResamplerImpl::forward(const torch::Tensor& features) {
  TORCH_CHECK(features.dim() == 5, "PerceiverResampler: expected features (B, T, F, v, D), got ",
              features.sizes());
  const auto b = features.size(0);
  const auto t = features.size(1);
  const auto x = features.reshape({b, t, features.size(2) * features.size(3), features.size(4)});
  auto lat = latents.to(x.scalar_type())
                 .view({1, 1, options.num_latents(), options.dim()})
                 .expand({b, t, options.num_latents(), options.dim()});
  for (const auto& layer : *layers) {
    auto* l = layer->as<PerceiverLayerImpl>();
    lat = runUnit(hooks, *l, lat, [&] { return l->forward(x, lat); });
  }
  return norm->forward(lat);
}

}  // namespace fs::model

#include "backend/model/flamingo_layer.h"

#include <torch/torch.h>

#include "backend/model/activation_checkpoint.h"

namespace fs::model {

FlamingoLayerImpl::FlamingoLayerImpl(GatedCrossAttentionBlock xattn, DecoderLayerPtr decoder)
    : decoder_layer(std::move(decoder)) {
  TORCH_CHECK(decoder_layer != nullptr, "FlamingoLayer: no decoder layer to wrap");
  if (xattn) gated_cross_attn_layer = register_module("gated_cross_attn_layer", xattn);
  register_module("decoder_layer", decoder_layer);
}

torch::Tensor FlamingoLayerImpl::forward(const torch::Tensor& hidden, const LayerContext& ctx) {
  auto x = hidden;
  if (gated_cross_attn_layer) {
    TORCH_CHECK(
        ctx.media.defined() && ctx.text_time.defined(),
        "FlamingoLayer: a gated cross-attention layer needs media and text_time (use Flamingo::forward)");
    if (gradient_checkpointing) {
      auto block = gated_cross_attn_layer.ptr();
      const auto text_time = ctx.text_time;
      const auto real_tokens = ctx.real_tokens;
      x = checkpointed(
          [block, text_time, real_tokens](const std::vector<torch::Tensor>& in) {
            return block->forward(in[0], in[1], text_time, real_tokens);
          },
          {x, ctx.media}, trainableParameters(*block));
    } else {
      x = gated_cross_attn_layer->forward(x, ctx.media, ctx.text_time, ctx.real_tokens);
    }
  }
  if (!gradient_checkpointing) return decoder_layer->forward(x, ctx);
  auto layer = decoder_layer;
  LayerContext inner = ctx;  // the decoder layer reads no media: do not keep it alive twice
  inner.media = torch::Tensor();
  inner.text_time = torch::Tensor();
  return checkpointed(
      [layer, inner](const std::vector<torch::Tensor>& in) { return layer->forward(in[0], inner); }, {x},
      trainableParameters(*layer));
}

}  // namespace fs::model

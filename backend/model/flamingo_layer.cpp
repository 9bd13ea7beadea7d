#include "backend/model/flamingo_layer.h"

#include <torch/torch.h>

#include <optional>

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
    auto block = gated_cross_attn_layer.ptr();
    const auto text_time = ctx.text_time;
    const auto real_tokens = ctx.real_tokens;
    // NOTE [Index sets from the host] in common.h.
    const std::optional<torch::Tensor> attending =
        ctx.index_sets != nullptr ? std::optional<torch::Tensor>(ctx.index_sets->attending) : std::nullopt;
    auto run = [block, text_time, real_tokens, attending, hooks = hooks](const torch::Tensor& in,
                                                                         const torch::Tensor& media) {
      return runUnit(hooks, *block, in, [&] {
        return block->forward(in, media, text_time, real_tokens, attending ? &*attending : nullptr);
      });
    };
    if (gradient_checkpointing) {
      x = checkpointed([run](const std::vector<torch::Tensor>& in) { return run(in[0], in[1]); },
                       {x, ctx.media}, trainableParameters(*block));
    } else {
      x = run(x, ctx.media);
    }
  }
  auto layer = decoder_layer;
  if (!gradient_checkpointing) return runUnit(hooks, *layer, x, [&] { return layer->forward(x, ctx); });
  LayerContext inner = ctx;  // the decoder layer reads no media: do not keep it alive twice
  inner.media = torch::Tensor();
  inner.text_time = torch::Tensor();
  inner.index_sets = nullptr;  // the caller's, gone by the recomputation
  return checkpointed(
      [layer, inner, hooks = hooks](const std::vector<torch::Tensor>& in) {
        return runUnit(hooks, *layer, in[0], [&] { return layer->forward(in[0], inner); });
      },
      {x}, trainableParameters(*layer));
}

}  // namespace fs::model

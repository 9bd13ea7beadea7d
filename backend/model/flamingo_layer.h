// FlamingoLayer: what each entry of the LM's decoder-layer list becomes.
//
// Holds `gated_cross_attn_layer` (a GatedCrossAttentionBlock, or none for the
// layers without one) and `decoder_layer` (the family's original block), in
// that registration order, which gives OpenFlamingo's paths, e.g.
// lang_encoder.model.decoder.layers.3.gated_cross_attn_layer.attn.to_q.weight
// lang_encoder.model.decoder.layers.3.decoder_layer.self_attn.q_proj.weight
// Forward: the gated block first (reading the media and text_time of the
// LayerContext), then the decoder layer. With gradient checkpointing, each of
// the two is checkpointed on its own (NOTE [Activation checkpointing]).
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
#pragma once

#include <memory>

#include "backend/model/gated_cross_attention.h"
#include "backend/model/lm_family.h"
#include "backend/model/unit_hooks.h"

namespace fs::model {

class FlamingoLayerImpl : public DecoderLayerImpl {
 public:
  // gated_cross_attn_layer may be empty (GatedCrossAttentionBlock{nullptr}).
  FlamingoLayerImpl(GatedCrossAttentionBlock gated_cross_attn_layer, DecoderLayerPtr decoder_layer);

  // REQUIRES: ctx.media and ctx.text_time defined when this layer has a gated block.
  torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) override;

  bool hasCrossAttention() const { return static_cast<bool>(gated_cross_attn_layer); }

  GatedCrossAttentionBlock gated_cross_attn_layer{nullptr};
  DecoderLayerPtr decoder_layer;
  bool gradient_checkpointing = false;
  std::shared_ptr<UnitHooks> hooks;  // NOTE [Unit hooks]; set through Flamingo::setUnitHooks
};
using FlamingoLayerPtr = std::shared_ptr<FlamingoLayerImpl>;

// OpenFlamingo's placement: a gated block before decoder layer i iff
// (i + 1) % every_n == 0.
inline bool hasCrossAttentionAt(int64_t layer_index, int64_t every_n) {
  return (layer_index + 1) % every_n == 0;
}

}  // namespace fs::model

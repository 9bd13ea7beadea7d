// The Flamingo model: frozen OpenCLIP vision tower + Perceiver resampler +
// causal LM whose decoder layers are FlamingoLayers (gated cross-attention +
// original block). Single-device: sharding, activation-checkpoint policy and
// mixed precision are applied from outside through the structure exposed
// below (visionEncoder / perceiver / flamingoLayers / embeddings).
//
// Parameter names and order are OpenFlamingo's state-dict names (NOTE
// [Parameter-name contract] in lm_family.h): vision_encoder.* (OpenCLIP's
// visual names), perceiver.*, lang_encoder.* (Hugging Face names with the
// FlamingoLayer paths).
//
// Thread-safety: one forward/backward at a time per instance; the freezing,
// masking and loading methods mutate parameters and must not overlap a step.
// Ownership: submodules are shared_ptr-owned by this module; accessors share.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/model/flamingo_layer.h"
#include "backend/model/gated_cross_attention.h"
#include "backend/model/lm_family.h"
#include "backend/model/perceiver.h"
#include "backend/model/state_dict.h"
#include "backend/model/vision_encoder.h"
#include "backend/state_keys/flamingo_keys.h"

namespace fs::protocol {
struct ModelConfig;
}

namespace fs::model {

struct FlamingoOptions {
  FlamingoOptions(VisionEncoderOptions vision, PerceiverOptions perceiver,
                  GatedCrossAttentionOptions cross_attn, LmOptions lm)
      : vision_(std::move(vision)),
        perceiver_(std::move(perceiver)),
        cross_attn_(std::move(cross_attn)),
        lm_(std::move(lm)) {}
  TORCH_ARG(VisionEncoderOptions, vision);
  TORCH_ARG(PerceiverOptions, perceiver);             // dim must equal vision.width
  TORCH_ARG(GatedCrossAttentionOptions, cross_attn);  // dim = lm.width, dim_visual = vision.width
  TORCH_ARG(LmOptions, lm);
  TORCH_ARG(int64_t, cross_attn_every_n_layers) = 1;
  // Embedding rows after adding the special tokens (tokenizer length); 0 keeps lm.vocab_size.
  TORCH_ARG(int64_t, vocab_size) = 0;
  TORCH_ARG(int64_t, image_id) = -1;       // <image>
  TORCH_ARG(int64_t, endofchunk_id) = -1;  // <|endofchunk|>
  TORCH_ARG(bool, freeze_lm_embeddings) = false;
  TORCH_ARG(bool, gradient_checkpointing) = false;

 public:
  // From the run config: shapes from each section, vocab and token ids from
  // model.tokens, family knobs as LmOptions::fromConfig.
  static FlamingoOptions fromConfig(const protocol::ModelConfig& config);
};

// tanh of one gated block's gates, for telemetry.
struct GateValues {
  int64_t layer = 0;  // decoder-layer index
  double attn = 0.0;  // tanh(attn_gate)
  double ff = 0.0;    // tanh(ff_gate)
};

class FlamingoImpl : public torch::nn::Module {
 public:
  // Builds every part from the current torch seed (seed before constructing so
  // every rank gets the same weights), resizes the token embedding to
  // options.vocab_size() (new rows as the LM's init) and inserts the
  // FlamingoLayers. All parameters require grad until freezeAsOpenFlamingo().
  explicit FlamingoImpl(FlamingoOptions options);

  // vision_x (B, T_img, F, C, H, W), input_ids (B, L), attention_mask (B, L)
  // (1 = token, 0 = right padding) -> logits (B, L, vocab).
  // Padding::kSkip: NOTE [Skipped padding] in common.h.
  // sets: the index sets picked by the caller, on the model's device (NOTE
  // [Index sets from the host] in common.h, indexSets); null = picked here.
  // select: logits (P, vocab) at the selected positions only (NOTE [Logits at
  // the targets] in output_head.h, targetSelection); null = every position.
  torch::Tensor forward(const torch::Tensor& vision_x, const torch::Tensor& input_ids,
                        const torch::Tensor& attention_mask, Padding padding = Padding::kCompute,
                        const IndexSets* sets = nullptr, const LogitSelection* select = nullptr);
  // The index sets forward() would pick for this batch, computed where input_ids and attention_mask
  // are (the host batch, in the trainer). images_per_sample: vision_x's T_img.
  IndexSets indexSets(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                      int64_t images_per_sample, Padding padding) const;
  // vision_x -> media (B, T_img, num_latents, d_vis): the tower under no-grad,
  // then the resampler (checkpointed when gradient checkpointing is on). With
  // input_ids, only the slots some token refers to are encoded; the others
  // get zeros (NOTE [Unreferenced media slots]).
  torch::Tensor encodeVision(const torch::Tensor& vision_x, const torch::Tensor& input_ids = {},
                             const IndexSets* sets = nullptr);
  // The LM conditioned on precomputed media.
  torch::Tensor forwardWithMedia(const torch::Tensor& media, const torch::Tensor& input_ids,
                                 const torch::Tensor& attention_mask, Padding padding = Padding::kCompute,
                                 const IndexSets* sets = nullptr, const LogitSelection* select = nullptr);

  // ---- structure (wrap units for FSDP and checkpoint policies)
  const FlamingoOptions& options() const { return options_; }
  VisionEncoder visionEncoder() const { return vision_encoder_; }
  PerceiverResampler perceiver() const { return perceiver_; }
  std::shared_ptr<CausalLmImpl> languageModel() const { return lang_encoder_; }
  // One per decoder layer, in order; each holds the original layer and its
  // gated block (or none).
  const std::vector<FlamingoLayerPtr>& flamingoLayers() const { return flamingo_layers_; }
  // The gated blocks that exist, in layer order.
  std::vector<GatedCrossAttentionBlock> gatedCrossAttentionBlocks() const;
  torch::nn::Embedding inputEmbedding() const { return lang_encoder_->inputEmbedding(); }
  torch::Tensor outputHeadWeight() const { return lang_encoder_->outputHeadWeight(); }

  // ---- training
  // OpenFlamingo's factory: everything frozen, then the perceiver, every gated
  // block and (unless freeze_lm_embeddings) the whole input embedding set
  // trainable. A tied head is the embedding, so it trains with it; an untied
  // head stays frozen.
  void freezeAsOpenFlamingo();
  // (vocab, 1): 1 on the <image> and <|endofchunk|> rows, 0 elsewhere.
  torch::Tensor embeddingGradientRowMask() const;
  // After backward: multiplies the input embedding's gradient by the row mask,
  // so only the two new tokens' rows change. No-op without a gradient.
  void maskEmbeddingGradient();
  // The selection of NOTE [Logits at the targets] (output_head.h) for a
  // caller that masks the embedding gradient after backward (the trainer):
  // `positions` as given, and with a tied head and a trainable embedding,
  // the two rows the mask keeps (on the positions' device).
  LogitSelection targetSelection(const torch::Tensor& positions) const;
  // `read` gives the current values of the parameters passed (e.g. assembled
  // from FSDP shards: the gates may not live in the module's own storage);
  // without it they are read as they are.
  using ParameterReader = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;
  std::vector<GateValues> gateValues(const ParameterReader& read = {}) const;
  void setGradientCheckpointing(bool enabled);
  // NOTE [Unit hooks]: called around the vision tower and each of its
  // residual blocks, the Perceiver and each of its layers, the input
  // embedding (again at a tied head), every gated block, every decoder layer
  // and an untied head; null removes them.
  void setUnitHooks(std::shared_ptr<UnitHooks> hooks);
  // The modules the hooks announce: the only ones a sharding engine can
  // gather just in time.
  std::set<const torch::nn::Module*> announcedModules() const;
  bool gradientCheckpointing() const { return options_.gradient_checkpointing(); }

  // ---- state dict
  // OpenFlamingo's state-dict names, in its order (named_parameters()).
  NamedTensors namedParameters() const;
  // An OpenFlamingo state dict (training checkpoint's model_state_dict or a
  // released checkpoint.pt): also accepts the `module.` prefix, the duplicate
  // lang_encoder.old_decoder_blocks.* / lang_encoder.gated_cross_attn_layers.*
  // keys, a tied head's lm_head.weight and recomputed LM buffers.
  LoadReport loadStateDict(const std::map<std::string, torch::Tensor>& state_dict);
  // A Hugging Face LM state dict (names without `lang_encoder.` and without
  // FlamingoLayer paths); "missing" covers the LM's parameters only.
  LoadReport loadLanguageModelStateDict(const std::map<std::string, torch::Tensor>& state_dict);
  // An OpenCLIP state dict (`visual.*`, text-tower keys ignored) or a bare
  // visual one; "missing" covers the vision tower only.
  LoadReport loadVisionStateDict(const std::map<std::string, torch::Tensor>& state_dict);
  // What the key mappers (backend/state_keys/flamingo_keys.h) need of the LM,
  // from its family: equals state_keys::lmKeyLayout(family, tied_head).
  state_keys::LmKeyLayout lmKeyLayout() const;

 private:
  // One width x width product over an image's tokens (NOTE [When skipping pays]).
  int64_t workPerImage() const;

  FlamingoOptions options_;
  VisionEncoder vision_encoder_{nullptr};
  PerceiverResampler perceiver_{nullptr};
  std::shared_ptr<CausalLmImpl> lang_encoder_;
  std::vector<FlamingoLayerPtr> flamingo_layers_;
  std::shared_ptr<UnitHooks> hooks_;
};
TORCH_MODULE(Flamingo);

}  // namespace fs::model

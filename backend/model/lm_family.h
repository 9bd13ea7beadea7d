// The one interface every language-model family implements (OPT, MPT,
// GPT-NeoX, LLaMA), and what Flamingo, the trainer and the FSDP wrapping see
// of an LM: the decoder-layer list, the input embedding, the output head
// (tied or not), Hugging Face's parameter names, and how a family builds its
// attention mask and positions. README.md in this folder says how to add one.
//
// NOTE [Parameter-name contract]: a family registers its modules under
// exactly the paths its Hugging Face class uses, in the same order (so
// named_parameters() lists them as PyTorch does), and decoderLayersPath() is
// OpenFlamingo's decoder_layers_attr_name for it. Flamingo replaces each list
// entry by a FlamingoLayer{gated_cross_attn_layer, decoder_layer}, which is
// what gives OpenFlamingo's state-dict paths.
//
// Thread-safety: one forward at a time per instance (LibTorch modules).
// Ownership: modules are shared_ptr-owned; decoderLayers() shares them.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/model/common.h"
#include "backend/model/output_head.h"
#include "backend/model/unit_hooks.h"

namespace fs::protocol {
struct LmConfig;
}

namespace fs::model {

struct LmOptions {
  TORCH_ARG(std::string, family) = "opt";  // opt | mpt | gpt_neox | llama
  TORCH_ARG(int64_t, vocab_size) = 50272;  // embedding rows as built (before new tokens)
  TORCH_ARG(int64_t, width) = 2048;
  TORCH_ARG(int64_t, layers) = 24;
  TORCH_ARG(int64_t, heads) = 32;
  TORCH_ARG(int64_t, ffn_dim) = 8192;
  TORCH_ARG(int64_t, max_positions) = 2048;
  TORCH_ARG(bool, tied_head) = true;
  // Dropout probabilities; unset = the family's default (the LM runs in train
  // mode, so these are active): OPT dropout 0.1, everything else 0.
  TORCH_ARG(std::optional<double>, dropout) = std::nullopt;  // residual / hidden
  TORCH_ARG(std::optional<double>, attention_dropout) = std::nullopt;
  TORCH_ARG(std::optional<double>, embedding_dropout) = std::nullopt;
  // Norm epsilon; unset = family default (LayerNorm 1e-5, LLaMA RMSNorm 1e-6).
  TORCH_ARG(std::optional<double>, norm_eps) = std::nullopt;
  TORCH_ARG(double, init_std) = 0.02;  // N(0, init_std) for Linear / Embedding, as HF's _init_weights
  // gpt_neox: rotary on the first rotary_pct of each head; parallel residual.
  // Defaults are RedPajama-INCITE-3B's (1.0, false); Pythia uses (0.25, true).
  TORCH_ARG(double, rotary_pct) = 1.0;
  TORCH_ARG(bool, parallel_residual) = false;
  TORCH_ARG(double, rotary_base) = 10000.0;  // gpt_neox, llama
  // mpt: LayerNorm on q and k (MPT-1B); MosaicGPT names (MPT-1B: ln_1, mlp.mlp_up,
  // ln_f) instead of MPT's (norm_1, ffn.up_proj, norm_f); ALiBi slope range.
  TORCH_ARG(bool, qk_ln) = false;
  TORCH_ARG(bool, mosaic_gpt_names) = false;
  TORCH_ARG(double, alibi_bias_max) = 8.0;
  // opt: pre-LN (OPT-125m/1.3b/...; OPT-350m is post-LN); padding row zeroed at init.
  TORCH_ARG(bool, layer_norm_before) = true;
  TORCH_ARG(int64_t, pad_token_id) = 1;

 public:
  // Shapes and family knobs as NOTE [LM resolution] (protocol/config/lm_resolver.h)
  // gives them: lm.path's config.json, else the catalog entry of its id, else
  // the defaults above. Throws c10::Error naming the file and field for a
  // config.json that is unreadable, asks for what no family implements, or
  // contradicts model.lm.
  static LmOptions fromConfig(const protocol::LmConfig& config);
  // Every dropout probability set to 0 (exact comparisons).
  LmOptions& noDropout();
  double dropoutOr(double family_default) const { return dropout_.value_or(family_default); }
  double attentionDropoutOr(double family_default) const {
    return attention_dropout_.value_or(family_default);
  }
  double embeddingDropoutOr(double family_default) const {
    return embedding_dropout_.value_or(family_default);
  }
  double normEpsOr(double family_default) const { return norm_eps_.value_or(family_default); }
};

// Per-forward inputs of every decoder layer, built once per forward.
struct LayerContext {
  int64_t batch = 0;  // B and L of the hidden state (B, L, width)
  int64_t length = 0;
  torch::Tensor attn_bias;  // additive, (B, 1|H, L, L): NOTE [Causal mask] in common.h
  // attn_bias adds a per-head position bias besides the mask (MPT's ALiBi):
  // only attention that adds attn_bias is exact, never the packed kernel or
  // SDPA's is_causal. Set by the family's layerContext().
  bool position_bias = false;
  // NOTE [Fused self-attention]: the causal mask alone gives every position
  // whose result is used the keys attn_bias gives it. Set by runLayers, on
  // the devices where the self-attention runs through SDPA.
  bool causal_suffices = false;
  // Rotary families: layerContext() gives (B|1, 1, L, rot); runLayers packs
  // them to the packed rows, (N, 1, rot), as causalSelfAttention's callers
  // rotate packed q and k. Undefined for the other families.
  torch::Tensor rope_cos;
  torch::Tensor rope_sin;
  torch::Tensor media;        // Flamingo only: (B, T_img, n_latents, d_vis)
  torch::Tensor text_time;    // Flamingo only: (B, L), NOTE [Media masking]
  torch::Tensor real_tokens;  // NOTE [Skipped padding] in common.h; undefined = every position
  // NOTE [Index sets from the host] in common.h: the attending tokens, when the caller picked them.
  const IndexSets* index_sets = nullptr;
  // Padding skipped: each sample's packed rows (packedOffsets), so causal
  // self-attention may run per sample (NOTE [Packed attention]). Empty when
  // padding is computed: the bias then decides what each position sees.
  std::vector<int64_t> packed_offsets;
};

// Causal self-attention of a decoder layer on packed q, k, v (N, H*D) (rows
// as packTokens(x, ctx.real_tokens) lays them out), every family's, MPT's
// with its ALiBi. Picks the path per call (NOTE [Fused attention] in
// fused_attention.h): SDPA on CUDA (NOTE [Fused self-attention]); on the CPU
// packedCausalAttention when ctx.packed_offsets is set, the bias is the mask
// alone and the kernel supports q's dtype and the dropout, else the composite
// scaledDotAttention with ctx.attn_bias. Returns (N, H*D).
//
// NOTE [Fused self-attention]: what SDPA is given, and so which kernel it may
// pick. The mask is NOTE [Causal mask]'s: key j visible to query i iff
// j <= i and j is a real token.
//  - The causal mask alone (is_causal and no attn_mask: flash attention in
//    bf16 / fp16, memory-efficient in fp32, which flash does not take) when
//    it gives every position whose result is used the keys the bias gives
//    it (ctx.causal_suffices). REQUIRES right padding (the data's
//    contract, backend/data/batch.h): then a real query's earlier keys are
//    all real, and only padded queries see more than the bias lets them
//    (earlier padding). Their results are unused when padding is skipped
//    (Padding::kSkip: the caller vouches every masked position holds the pad
//    id, so its label is -100; its rows are dropped after the attention) or
//    when there is none (IndexSets::unpadded from the host batch; a CPU mask
//    is looked at). So is_causal under kSkip or without padding.
//  - Else the bias as attn_mask, (B, 1, L, L): memory-efficient attention,
//    which adds an arbitrary bias, or math; never flash. Padding computed
//    (Padding::kCompute) with padding in the batch lands here, so the
//    padded positions' logits equal the CPU path's too.
//  - MPT: ALiBi adds slope_h * (j - L + 1) per head, a bias SDPA can only
//    take as attn_mask: ctx.attn_bias (B, H, L, L) always (ALiBi + causal +
//    padding), memory-efficient or math, never flash (FlashAttention's own
//    ALiBi slopes are not reachable through SDPA).
// A real query always sees itself, so no row the loss reaches is fully
// masked (NOTE [Fused attention]); only a sample without any real token,
// under the bias, has such rows: their forward is the reference's, their
// backward not, and with the pad id everywhere (label -100) no gradient
// reaches them.
torch::Tensor causalSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  int64_t heads, double scale, const LayerContext& ctx, double dropout,
                                  bool training);

// ctx.causal_suffices for a batch (NOTE [Fused self-attention]): padding
// skipped, or no padding as the caller saw it (sets->unpadded) or as a CPU
// mask shows. REQUIRES right padding.
bool causalMaskSuffices(const torch::Tensor& attention_mask, Padding padding, const IndexSets* sets);

// The context of the rotary families (GPT-NeoX, LLaMA): causal padding bias
// and rotate-half tables for positions 0..L-1 over the first `rot_dim` channels.
LayerContext rotaryLayerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                int64_t rot_dim, double base, c10::ScalarType dtype);

// One entry of an LM's decoder-layer list (a family's own block, or a
// FlamingoLayer wrapping one).
class DecoderLayerImpl : public torch::nn::Module {
 public:
  using torch::nn::Module::Module;
  // hidden (B, L, width) -> (B, L, width).
  virtual torch::Tensor forward(const torch::Tensor& hidden, const LayerContext& ctx) = 0;
};
using DecoderLayerPtr = std::shared_ptr<DecoderLayerImpl>;

class CausalLmImpl : public torch::nn::Module {
 public:
  explicit CausalLmImpl(LmOptions options);
  const LmOptions& options() const { return options_; }

  // ---- provided by each family
  // Dotted path of the decoder-layer list, e.g. "model.decoder.layers".
  virtual std::string decoderLayersPath() const = 0;
  // Path of the input embedding module, e.g. "model.decoder.embed_tokens".
  virtual std::string inputEmbeddingPath() const = 0;
  // Path of the output head module: where an untied head is registered, and
  // the name a tied head has in Hugging Face state dicts ("lm_head",
  // "embed_out"; MPT: "lm_head", which its tied checkpoints never contain).
  virtual std::string outputHeadPath() const = 0;
  // input ids (B, L) -> first hidden state: token embeddings (+ learned
  // positions) (+ embedding dropout).
  virtual torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) = 0;
  // Attention bias and positions for this batch (REQUIRES right padding).
  virtual LayerContext layerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                    c10::ScalarType dtype) = 0;
  // Final norm of the last hidden state.
  virtual torch::Tensor finalNorm(const torch::Tensor& hidden) = 0;
  // Name suffixes of buffers Hugging Face checkpoints may carry that we
  // recompute (rotary inv_freq, causal-mask buffers): skipped on load.
  virtual std::vector<std::string> recomputedBufferSuffixes() const { return {}; }

  // ---- shared
  const std::vector<DecoderLayerPtr>& decoderLayers() const { return layers_; }
  // Replaces every list entry i by wrap(i, entry), keeping the list's path.
  void wrapDecoderLayers(const std::function<DecoderLayerPtr(int64_t, DecoderLayerPtr)>& wrap);
  torch::nn::Embedding inputEmbedding() const { return embed_tokens_; }
  bool tiedHead() const { return !lm_head_; }
  // (vocab, width); for a tied head this is inputEmbedding()->weight itself.
  torch::Tensor outputHeadWeight() const;
  torch::nn::Linear outputHead() const { return lm_head_; }  // empty when tied
  int64_t vocabRows() const;
  // Hugging Face resize_token_embeddings: new tensors with `rows` rows, the
  // first min(old, rows) copied, new rows N(0, init_std); an untied head is
  // resized the same way; a tied head follows the embedding. The parameter
  // objects are kept (set_data), so references stay valid.
  void resizeTokenEmbeddings(int64_t rows);
  // NOTE [Unit hooks]: announces the input embedding (the lookup, and a tied
  // head, which reads the same weight) and an untied output head.
  std::shared_ptr<UnitHooks> hooks;

  // input ids (B, L), attention mask (B, L) (1 = token, 0 = right padding;
  // undefined = all ones), optional Flamingo conditioning -> logits (B, L, V).
  // sets: NOTE [Index sets from the host] in common.h; null = picked here.
  // select: logits (P, V) at select->positions only (NOTE [Logits at the
  // targets] in output_head.h); null = every position.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                        const torch::Tensor& media = {}, const torch::Tensor& text_time = {},
                        Padding padding = Padding::kCompute, const IndexSets* sets = nullptr,
                        const LogitSelection* select = nullptr);
  // The same up to and including the final norm (B, L, width).
  torch::Tensor hiddenStates(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                             const torch::Tensor& media = {}, const torch::Tensor& text_time = {},
                             Padding padding = Padding::kCompute);

 protected:
  // For family constructors, in Hugging Face's registration order.
  void registerInputEmbedding();
  void registerDecoderLayers(std::vector<DecoderLayerPtr> layers);
  void registerOutputHeadIfUntied();
  // HF-style init of everything registered so far: Linear and Embedding
  // N(0, init_std), biases 0 (norms are built as 1 / 0).
  void initWeights();
  torch::Tensor defaultMask(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) const;
  // hiddenStates() with the mask defaulted and the real-token index computed
  // once (undefined: every position), shared with forward().
  torch::Tensor runLayers(const torch::Tensor& input_ids, const torch::Tensor& mask,
                          const torch::Tensor& media, const torch::Tensor& text_time,
                          const torch::Tensor& real_tokens, Padding padding, const IndexSets* sets = nullptr);

  LmOptions options_;
  torch::nn::Embedding embed_tokens_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  // untied head only
  std::vector<DecoderLayerPtr> layers_;

 private:
  torch::nn::ModuleList layer_list_{nullptr};
};

}  // namespace fs::model

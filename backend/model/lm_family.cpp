#include "backend/model/lm_family.h"

#include <torch/torch.h>

#include "backend/model/common.h"
#include "backend/model/fused_attention.h"
#include "backend/model/packed_attention.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/lm_resolver.h"

namespace fs::model {
namespace {

// "a.b.c" -> {"a.b", "c"}
std::pair<std::string, std::string> splitPath(const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

}  // namespace

// ---------------------------------------------------------------- options

LmOptions LmOptions::fromConfig(const protocol::LmConfig& c) {
  // NOTE [LM resolution] in lm_resolver.h: config.json > catalog > family defaults.
  const auto resolved = protocol::resolveLm(c);
  TORCH_CHECK(resolved.isOk(), "model.lm.path: ", resolved.status().message());
  const auto& s = resolved->shape;
  const auto& a = resolved->arch;
  LmOptions o;
  o.family(s.family)
      .vocab_size(s.vocab_size)
      .width(s.width)
      .layers(s.layers)
      .heads(s.heads)
      .ffn_dim(s.ffn_dim)
      .max_positions(s.max_positions)
      .tied_head(s.tied_head)
      .norm_eps(a.norm_eps)
      .rotary_pct(a.rotary_pct)
      .parallel_residual(a.parallel_residual)
      .rotary_base(a.rotary_base)
      .qk_ln(a.qk_ln)
      .mosaic_gpt_names(a.mosaic_gpt_names)
      .alibi_bias_max(a.alibi_bias_max)
      .layer_norm_before(a.layer_norm_before)
      .pad_token_id(a.pad_token_id)
      .dropout(a.dropout)
      .attention_dropout(a.attention_dropout)
      .embedding_dropout(a.embedding_dropout);
  return o;
}

LmOptions& LmOptions::noDropout() {
  dropout_ = 0.0;
  attention_dropout_ = 0.0;
  embedding_dropout_ = 0.0;
  return *this;
}

// ---------------------------------------------------------------- shared machinery

CausalLmImpl::CausalLmImpl(LmOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  TORCH_CHECK(o.width() % o.heads() == 0, "lm.width ", o.width(), " is not divisible by lm.heads ",
              o.heads());
  TORCH_CHECK(o.vocab_size() > 0 && o.layers() > 0, "lm.vocab_size and lm.layers must be positive");
}

void CausalLmImpl::registerInputEmbedding() {
  embed_tokens_ = torch::nn::Embedding(options_.vocab_size(), options_.width());
  const auto [parent, leaf] = splitPath(inputEmbeddingPath());
  containerAt(*this, parent).register_module(leaf, embed_tokens_);
}

void CausalLmImpl::registerDecoderLayers(std::vector<DecoderLayerPtr> layers) {
  layer_list_ = torch::nn::ModuleList();
  for (const auto& layer : layers) layer_list_->push_back(layer);
  layers_ = std::move(layers);
  const auto [parent, leaf] = splitPath(decoderLayersPath());
  containerAt(*this, parent).register_module(leaf, layer_list_);
}

void CausalLmImpl::registerOutputHeadIfUntied() {
  if (options_.tied_head()) return;
  lm_head_ = torch::nn::Linear(torch::nn::LinearOptions(options_.width(), options_.vocab_size()).bias(false));
  const auto [parent, leaf] = splitPath(outputHeadPath());
  containerAt(*this, parent).register_module(leaf, lm_head_);
}

void CausalLmImpl::initWeights() {
  for (const auto& m : modules(/*include_self=*/false)) {
    if (auto* linear = m->as<torch::nn::LinearImpl>()) {
      initNormal(linear->weight, options_.init_std());
      initZeros(linear->bias);
    } else if (auto* emb = m->as<torch::nn::EmbeddingImpl>()) {
      initNormal(emb->weight, options_.init_std());
    }
  }
}

void CausalLmImpl::wrapDecoderLayers(const std::function<DecoderLayerPtr(int64_t, DecoderLayerPtr)>& wrap) {
  auto list = torch::nn::ModuleList();
  std::vector<DecoderLayerPtr> wrapped;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto layer = wrap(static_cast<int64_t>(i), layers_[i]);
    TORCH_CHECK(layer != nullptr, "wrapDecoderLayers: the wrapper returned no layer for index ", i);
    list->push_back(layer);
    wrapped.push_back(std::move(layer));
  }
  const auto [parent, leaf] = splitPath(decoderLayersPath());
  layer_list_ = containerAt(*this, parent).replace_module(leaf, list);
  layers_ = std::move(wrapped);
}

torch::Tensor CausalLmImpl::outputHeadWeight() const {
  return lm_head_ ? lm_head_->weight : embed_tokens_->weight;
}

int64_t CausalLmImpl::vocabRows() const {
  return embed_tokens_->weight.size(0);
}

void CausalLmImpl::resizeTokenEmbeddings(int64_t rows) {
  TORCH_CHECK(rows > 0, "resizeTokenEmbeddings: rows must be positive, got ", rows);
  torch::NoGradGuard no_grad;
  auto resized = [&](const torch::Tensor& old) {
    auto fresh = torch::empty({rows, old.size(1)}, old.options());
    initNormal(fresh, options_.init_std());
    const auto keep = std::min<int64_t>(rows, old.size(0));
    fresh.narrow(0, 0, keep).copy_(old.narrow(0, 0, keep));
    return fresh;
  };
  embed_tokens_->weight.set_data(resized(embed_tokens_->weight));
  embed_tokens_->options.num_embeddings(rows);
  if (lm_head_) {
    lm_head_->weight.set_data(resized(lm_head_->weight));
    lm_head_->options.out_features(rows);
  }
}

torch::Tensor CausalLmImpl::defaultMask(const torch::Tensor& input_ids,
                                        const torch::Tensor& attention_mask) const {
  TORCH_CHECK(input_ids.dim() == 2, "CausalLm: input_ids must be (B, L), got ", input_ids.sizes());
  if (!attention_mask.defined()) return torch::ones_like(input_ids);
  TORCH_CHECK(attention_mask.sizes() == input_ids.sizes(), "CausalLm: attention_mask ",
              attention_mask.sizes(), " does not match input_ids ", input_ids.sizes());
  return attention_mask;
}

torch::Tensor CausalLmImpl::hiddenStates(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                         const torch::Tensor& media, const torch::Tensor& text_time,
                                         Padding padding) {
  const auto mask = defaultMask(input_ids, attention_mask);
  return runLayers(input_ids, mask, media, text_time,
                   padding == Padding::kSkip ? realTokenIndex(mask) : torch::Tensor(), padding);
}

torch::Tensor CausalLmImpl::runLayers(const torch::Tensor& input_ids, const torch::Tensor& mask,
                                      const torch::Tensor& media, const torch::Tensor& text_time,
                                      const torch::Tensor& real_tokens, Padding padding,
                                      const IndexSets* sets) {
  auto hidden = runUnit(hooks, *embed_tokens_, {}, [&] { return embed(input_ids, mask); });
  auto ctx = layerContext(input_ids, mask, hidden.scalar_type());
  ctx.batch = input_ids.size(0);
  ctx.length = input_ids.size(1);
  ctx.media = media;
  ctx.text_time = text_time;
  ctx.real_tokens = real_tokens;
  ctx.index_sets = sets;
  // The offsets are read back to the host; only the CPU's packed attention uses them
  // (packedAttentionSupports).
  if (padding == Padding::kSkip && mask.device().is_cpu()) ctx.packed_offsets = packedOffsets(mask);
  if (runsOnSdpa(AttentionKind::kCausalSelf, hidden))
    ctx.causal_suffices = causalMaskSuffices(mask, padding, sets);
  const auto packRope = [&](const torch::Tensor& t) {
    if (!t.defined()) return t;
    const auto rows = t.expand({ctx.batch, 1, ctx.length, t.size(-1)}).squeeze(1);
    return packTokens(rows, real_tokens).unsqueeze(1);
  };
  ctx.rope_cos = packRope(ctx.rope_cos);
  ctx.rope_sin = packRope(ctx.rope_sin);
  for (const auto& layer : layers_) hidden = layer->forward(hidden, ctx);
  return onRealTokens(hidden, real_tokens, [this](const torch::Tensor& h) { return finalNorm(h); });
}

torch::Tensor CausalLmImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                    const torch::Tensor& media, const torch::Tensor& text_time,
                                    Padding padding, const IndexSets* sets, const LogitSelection* select) {
  const auto mask = defaultMask(input_ids, attention_mask);
  const auto real = sets != nullptr             ? sets->realTokens
                    : padding == Padding::kSkip ? realTokenIndex(mask)
                                                : torch::Tensor();
  const auto hidden = runLayers(input_ids, mask, media, text_time, real, padding, sets);
  torch::nn::Module& head = lm_head_ ? static_cast<torch::nn::Module&>(*lm_head_) : *embed_tokens_;
  return runUnit(hooks, head, hidden, [&] {
    const auto weight = outputHeadWeight().to(hidden.scalar_type());
    if (select == nullptr)
      return onRealTokens(hidden, real, [&](const torch::Tensor& h) { return torch::linear(h, weight); });
    // NOTE [Logits at the targets] in output_head.h.
    TORCH_CHECK(select->positions.defined() && select->positions.dim() == 1,
                "CausalLm: the logit selection needs 1-D positions");
    const auto rows = hidden.reshape({-1, hidden.size(-1)}).index_select(0, select->positions);
    return headLogits(rows, weight, select->weight_rows);
  });
}

torch::Tensor causalSelfAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  int64_t heads, double scale, const LayerContext& ctx, double dropout,
                                  bool training) {
  const auto split = [&](const torch::Tensor& t) {
    return splitHeads(unpackTokens(t, ctx.real_tokens, ctx.batch, ctx.length), heads);
  };
  if (runsOnSdpa(AttentionKind::kCausalSelf, q)) {
    // NOTE [Fused self-attention].
    const bool causal = ctx.causal_suffices && !ctx.position_bias;
    const auto out =
        sdpaAttention(AttentionKind::kCausalSelf, split(q), split(k), split(v),
                      causal ? torch::Tensor() : ctx.attn_bias, causal, scale, training ? dropout : 0.0);
    return packTokens(mergeHeads(out), ctx.real_tokens);
  }
  if (!ctx.position_bias && !ctx.packed_offsets.empty() &&
      packedAttentionSupports(q, k, v, dropout, training))
    return packedCausalAttention(q, k, v, heads, scale, ctx.packed_offsets);
  const auto out = scaledDotAttention(split(q), split(k), split(v), scale, ctx.attn_bias, dropout, training);
  return packTokens(mergeHeads(out), ctx.real_tokens);
}

bool causalMaskSuffices(const torch::Tensor& attention_mask, Padding padding, const IndexSets* sets) {
  if (padding == Padding::kSkip || (sets != nullptr && sets->unpadded)) return true;
  // Looking at a device's mask would be a host sync.
  return attention_mask.device().is_cpu() && attention_mask.ne(0).all().item<bool>();
}

LayerContext rotaryLayerContext(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                int64_t rot_dim, double base, c10::ScalarType dtype) {
  const auto l = input_ids.size(1);
  const auto positions =
      torch::arange(l, torch::TensorOptions().dtype(torch::kLong).device(input_ids.device())).unsqueeze(0);
  const auto tables = rotaryTables(positions, rot_dim, base, dtype);
  LayerContext ctx;
  ctx.attn_bias = causalAttentionBias(attention_mask, dtype);
  ctx.rope_cos = tables.cos;
  ctx.rope_sin = tables.sin;
  return ctx;
}

}  // namespace fs::model

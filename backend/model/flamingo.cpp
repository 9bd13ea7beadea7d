#include "backend/model/flamingo.h"

#include <torch/torch.h>

#include "backend/model/activation_checkpoint.h"
#include "backend/model/lm_factory.h"
#include "backend/protocol/config/config_types.h"
#include "backend/state_keys/flamingo_keys.h"

namespace fs::model {
FlamingoOptions FlamingoOptions::fromConfig(const protocol::ModelConfig& c) {
  FlamingoOptions o(VisionEncoderOptions::fromConfig(c.vision),
                    PerceiverOptions::fromConfig(c.vision.width, c.perceiver),
                    GatedCrossAttentionOptions::fromConfig(c.lm.width, c.vision.width, c.cross_attn),
                    LmOptions::fromConfig(c.lm));
  o.cross_attn_every_n_layers(c.cross_attn.every_n_layers)
      .vocab_size(c.tokens.vocab_size)
      .image_id(c.tokens.image_id)
      .endofchunk_id(c.tokens.endofchunk_id)
      .freeze_lm_embeddings(c.freeze_lm_embeddings)
      .gradient_checkpointing(c.gradient_checkpointing);
  return o;
}

FlamingoImpl::FlamingoImpl(FlamingoOptions opts) : options_(std::move(opts)) {
  const auto& o = options_;
  TORCH_CHECK(o.perceiver().dim() == o.vision().width(), "model.perceiver: dim ", o.perceiver().dim(),
              " must equal the vision width ", o.vision().width());
  TORCH_CHECK(o.cross_attn().dim() == o.lm().width() && o.cross_attn().dim_visual() == o.vision().width(),
              "model.cross_attn: dims (", o.cross_attn().dim(), ", ", o.cross_attn().dim_visual(),
              ") must equal (lm.width, vision.width) = (", o.lm().width(), ", ", o.vision().width(), ")");
  TORCH_CHECK(o.cross_attn_every_n_layers() >= 1, "model.cross_attn.every_n_layers must be >= 1, got ",
              o.cross_attn_every_n_layers());

  // OpenFlamingo's attribute order: vision_encoder, perceiver, lang_encoder.
  vision_encoder_ = register_module("vision_encoder", VisionEncoder(o.vision()));
  perceiver_ = register_module("perceiver", PerceiverResampler(o.perceiver()));
  lang_encoder_ = makeCausalLm(o.lm());
  if (o.vocab_size() > 0 && o.vocab_size() != lang_encoder_->vocabRows()) {
    lang_encoder_->resizeTokenEmbeddings(o.vocab_size());
  }
  register_module("lang_encoder", lang_encoder_);
  lang_encoder_->wrapDecoderLayers([&](int64_t i, DecoderLayerPtr layer) {
    GatedCrossAttentionBlock block{nullptr};
    if (hasCrossAttentionAt(i, o.cross_attn_every_n_layers()))
      block = GatedCrossAttentionBlock(o.cross_attn());
    auto wrapped = std::make_shared<FlamingoLayerImpl>(block, std::move(layer));
    wrapped->gradient_checkpointing = o.gradient_checkpointing();
    flamingo_layers_.push_back(wrapped);
    return wrapped;
  });
}

// ---------------------------------------------------------------- forward

// NOTE [Unreferenced media slots]: a text token attends only to the slot its
// text_time names (NOTE [Media masking]), and text_time never exceeds the
// number of <image> tokens in its row. So slot t of row b, when the row has
// at most t <image> tokens (an MMC4 sample with fewer images than
// max_num_images, or whose text was cut), is never attended: its logits are
// masked to the lowest float, its softmax weights are exactly 0, and nothing
// it computes reaches the loss or a gradient. OpenFlamingo still runs the
// tower and the resampler on those zero images; we encode only the referenced
// slots and give the others zero media. Results are the same up to float
// summation order (the resampler's weight gradients sum over fewer rows).
// When every slot or no slot is referenced, everything is encoded as before,
// so every rank always runs both units (FSDP's gathers stay in step) and
// every resampler parameter gets a gradient (DDP's reducer expects one).
namespace {
// The flat (B * T_img) indices of the referenced slots; undefined when all or
// none are referenced, or when leaving the others out does not pay
// (skippingPays, work_per_image: one width x width product over an image's
// tokens; the tower and the resampler do ~20 of them).
torch::Tensor referencedSlots(const torch::Tensor& input_ids, int64_t image_id, int64_t slots,
                              int64_t work_per_image) {
  // At most every slot is left out: when even that does not pay, no need to look.
  if (!input_ids.defined() || slots <= 1 || !skippingPays(input_ids.size(0) * slots, work_per_image))
    return {};
  const auto counts = input_ids.eq(image_id).sum(1, /*keepdim=*/true);  // (B, 1)
  const auto slot = torch::arange(slots, counts.options()).view({1, slots});
  const auto referenced = slot.lt(counts).reshape({-1});
  const auto n = referenced.sum().item<int64_t>();
  if (n == 0 || !skippingPays(referenced.numel() - n, work_per_image)) return {};
  return referenced.nonzero().view({-1});
}
}  // namespace

int64_t FlamingoImpl::workPerImage() const {
  const auto& vision = options_.vision();
  return vision.gridSize() * vision.gridSize() * vision.width() * vision.width();
}

IndexSets FlamingoImpl::indexSets(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                  int64_t images_per_sample, Padding padding) const {
  IndexSets sets;
  sets.slots = referencedSlots(input_ids, options_.image_id(), images_per_sample, workPerImage());
  if (padding == Padding::kSkip)
    sets.realTokens = realTokenIndex(attention_mask.defined() ? attention_mask : torch::ones_like(input_ids));
  sets.unpadded = !attention_mask.defined() || attention_mask.ne(0).all().item<bool>();
  // attendingTokens' own first test, before text_time is computed for it.
  const int64_t work = GatedCrossAttentionBlockImpl::workPerToken(options_.cross_attn());
  if (work == 0 || skippingPays(input_ids.numel(), work)) {
    sets.attending = attendingTokens(mediaTextTime(input_ids, options_.image_id()), sets.realTokens,
                                     images_per_sample, work);
  }
  return sets;
}

torch::Tensor FlamingoImpl::encodeVision(const torch::Tensor& vision_x, const torch::Tensor& input_ids,
                                         const IndexSets* sets) {
  TORCH_CHECK(vision_x.dim() == 6, "Flamingo: vision_x must be (B, T_img, F, C, H, W), got ",
              vision_x.sizes());
  const auto s = vision_x.sizes();
  TORCH_CHECK(s[2] == 1, "Flamingo: only single-frame media (F = 1) is supported, got F = ", s[2]);
  TORCH_CHECK(!input_ids.defined() || input_ids.size(0) == s[0], "Flamingo: input_ids batch ",
              input_ids.size(0), " does not match vision_x batch ", s[0]);
  const auto slots =
      sets != nullptr ? sets->slots : referencedSlots(input_ids, options_.image_id(), s[1], workPerImage());
  // (B T_img, C, H, W): every slot, or the referenced ones in slot order.
  auto images = vision_x.reshape({s[0] * s[1] * s[2], s[3], s[4], s[5]});
  if (slots.defined()) images = images.index_select(0, slots);
  torch::Tensor features;
  {
    torch::NoGradGuard no_grad;
    features = runUnit(hooks_, *vision_encoder_, images, [&] { return vision_encoder_->forward(images); });
  }
  // (B, T_img, F, v, D), or (1, referenced, 1, v, D): the resampler works per slot.
  features = slots.defined() ? features.view({1, images.size(0), 1, features.size(1), features.size(2)})
                             : features.view({s[0], s[1], s[2], features.size(1), features.size(2)});
  auto resampler = perceiver_.ptr();
  auto run = [resampler, hooks = hooks_](const torch::Tensor& in) {
    return runUnit(hooks, *resampler, in, [&] { return resampler->forward(in); });
  };
  auto media = options_.gradient_checkpointing()
                   ? checkpointed([run](const std::vector<torch::Tensor>& in) { return run(in[0]); },
                                  {features}, trainableParameters(*perceiver_))
                   : run(features);
  if (!slots.defined()) return media;
  const auto n = media.size(2);
  const auto d = media.size(3);
  torch::Tensor out = torch::zeros({s[0] * s[1], n, d}, media.options());
  out.index_copy_(0, slots, media.view({-1, n, d}));  // NOTE [Unpack in place] (common.cpp)
  return out.view({s[0], s[1], n, d});
}

torch::Tensor FlamingoImpl::forwardWithMedia(const torch::Tensor& media, const torch::Tensor& input_ids,
                                             const torch::Tensor& attention_mask, Padding padding,
                                             const IndexSets* sets, const LogitSelection* select) {
  TORCH_CHECK(media.size(0) == input_ids.size(0), "Flamingo: media batch ", media.size(0),
              " does not match input_ids batch ", input_ids.size(0));
  const auto text_time = mediaTextTime(input_ids, options_.image_id());
  return lang_encoder_->forward(input_ids, attention_mask, media, text_time, padding, sets, select);
}

torch::Tensor FlamingoImpl::forward(const torch::Tensor& vision_x, const torch::Tensor& input_ids,
                                    const torch::Tensor& attention_mask, Padding padding,
                                    const IndexSets* sets, const LogitSelection* select) {
  return forwardWithMedia(encodeVision(vision_x, input_ids, sets), input_ids, attention_mask, padding, sets,
                          select);
}

// ---------------------------------------------------------------- structure and training

std::vector<GatedCrossAttentionBlock> FlamingoImpl::gatedCrossAttentionBlocks() const {
  std::vector<GatedCrossAttentionBlock> blocks;
  for (const auto& layer : flamingo_layers_) {
    if (layer->hasCrossAttention()) blocks.push_back(layer->gated_cross_attn_layer);
  }
  return blocks;
}

void FlamingoImpl::freezeAsOpenFlamingo() {
  for (auto& p : parameters()) p.set_requires_grad(false);
  for (auto& p : perceiver_->parameters()) p.set_requires_grad(true);
  for (const auto& block : gatedCrossAttentionBlocks()) {
    for (auto& p : block->parameters()) p.set_requires_grad(true);
  }
  if (!options_.freeze_lm_embeddings()) inputEmbedding()->weight.set_requires_grad(true);
}

namespace {

// The rows the embedding-gradient mask keeps must exist.
void checkMaskRows(const FlamingoOptions& options, int64_t rows) {
  for (const auto id : {options.image_id(), options.endofchunk_id()}) {
    TORCH_CHECK(id >= 0 && id < rows, "model.tokens: special token id ", id, " is outside the embedding's ",
                rows, " rows");
  }
}

}  // namespace

torch::Tensor FlamingoImpl::embeddingGradientRowMask() const {
  const auto& weight = inputEmbedding()->weight;
  const auto rows = weight.size(0);
  checkMaskRows(options_, rows);
  auto mask = torch::zeros({rows, 1}, torch::TensorOptions().dtype(weight.dtype()).device(weight.device()));
  mask[options_.image_id()] = 1;
  mask[options_.endofchunk_id()] = 1;
  return mask;
}

LogitSelection FlamingoImpl::targetSelection(const torch::Tensor& positions) const {
  LogitSelection select{positions, {}};
  if (lang_encoder_->tiedHead() && !options_.freeze_lm_embeddings()) {
    checkMaskRows(options_, inputEmbedding()->weight.size(0));
    TORCH_CHECK(options_.image_id() != options_.endofchunk_id(),
                "model.tokens: image_id and endofchunk_id are both ", options_.image_id());
    auto kept = torch::empty({2}, torch::kLong);  // one op, not torch::tensor's fill per element
    kept.data_ptr<int64_t>()[0] = options_.image_id();
    kept.data_ptr<int64_t>()[1] = options_.endofchunk_id();
    select.weight_rows = kept.to(positions.device());
  }
  return select;
}

void FlamingoImpl::maskEmbeddingGradient() {
  auto grad = inputEmbedding()->weight.grad();
  if (!grad.defined()) return;
  torch::NoGradGuard no_grad;
  grad.mul_(embeddingGradientRowMask().to(grad.dtype()));
}

std::vector<GateValues> FlamingoImpl::gateValues(const ParameterReader& read) const {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> layers;
  std::vector<torch::Tensor> gates;  // attn, ff per layer
  for (size_t i = 0; i < flamingo_layers_.size(); ++i) {
    const auto& layer = flamingo_layers_[i];
    if (!layer->hasCrossAttention()) continue;
    layers.push_back(static_cast<int64_t>(i));
    gates.push_back(layer->gated_cross_attn_layer->attn_gate);
    gates.push_back(layer->gated_cross_attn_layer->ff_gate);
  }
  if (read) gates = read(gates);
  std::vector<GateValues> values;
  for (size_t k = 0; k < layers.size(); ++k) {
    values.push_back({layers[k], gates[2 * k].tanh().item<double>(), gates[2 * k + 1].tanh().item<double>()});
  }
  return values;
}

void FlamingoImpl::setGradientCheckpointing(bool enabled) {
  options_.gradient_checkpointing(enabled);
  for (auto& layer : flamingo_layers_) layer->gradient_checkpointing = enabled;
}

// ---------------------------------------------------------------- state dict

NamedTensors FlamingoImpl::namedParameters() const {
  NamedTensors out;
  for (const auto& item : named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

state_keys::LmKeyLayout FlamingoImpl::lmKeyLayout() const {
  return {lang_encoder_->decoderLayersPath(), lang_encoder_->outputHeadPath(), lang_encoder_->tiedHead(),
          lang_encoder_->recomputedBufferSuffixes()};
}

LoadReport FlamingoImpl::loadStateDict(const std::map<std::string, torch::Tensor>& state_dict) {
  return loadNamedTensors(namedParameters(), state_dict, state_keys::flamingoKeyMapper(lmKeyLayout()));
}

LoadReport FlamingoImpl::loadLanguageModelStateDict(const std::map<std::string, torch::Tensor>& state_dict) {
  NamedTensors scope;
  for (const auto& [name, tensor] : namedParameters()) {
    if (state_keys::inLanguageModelScope(name)) scope.emplace_back(name, tensor);
  }
  return loadNamedTensors(scope, state_dict, state_keys::languageModelKeyMapper(lmKeyLayout()));
}

LoadReport FlamingoImpl::loadVisionStateDict(const std::map<std::string, torch::Tensor>& state_dict) {
  bool full_clip = false;
  for (const auto& item : state_dict) full_clip = full_clip || item.first.rfind("visual.", 0) == 0;
  NamedTensors scope;
  for (const auto& [name, tensor] : namedParameters()) {
    if (state_keys::inVisionScope(name)) scope.emplace_back(name, tensor);
  }
  return loadNamedTensors(scope, state_dict, state_keys::visionKeyMapper(full_clip));
}

void FlamingoImpl::setUnitHooks(std::shared_ptr<UnitHooks> hooks) {
  hooks_ = hooks;
  vision_encoder_->hooks = hooks;
  perceiver_->hooks = hooks;
  lang_encoder_->hooks = hooks;
  for (auto& layer : flamingo_layers_) layer->hooks = hooks;
}

std::set<const torch::nn::Module*> FlamingoImpl::announcedModules() const {
  std::set<const torch::nn::Module*> out = {vision_encoder_.get(), perceiver_.get(),
                                            lang_encoder_->inputEmbedding().get()};
  for (const auto& b : *vision_encoder_->resblocks) out.insert(b.get());
  for (const auto& l : *perceiver_->layers) out.insert(l.get());
  if (!lang_encoder_->tiedHead()) out.insert(lang_encoder_->outputHead().get());
  for (const auto& layer : flamingo_layers_) {
    if (layer->hasCrossAttention()) out.insert(layer->gated_cross_attn_layer.get());
    out.insert(layer->decoder_layer.get());
  }
  return out;
}

}  // namespace fs::model

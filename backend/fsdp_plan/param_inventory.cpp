#include "backend/fsdp_plan/param_inventory.h"

#include <map>
#include <set>

#include "backend/protocol/config/lm_resolver.h"

namespace fs::fsdp_plan {
namespace {

using protocol::Status;
using Shape = std::vector<int64_t>;

constexpr int64_t kOptPositionOffset = 2;  // OptLmImpl::kPositionOffset

// Forward position: stage (vision, perceiver, embeddings, layer i, final
// norm, head) then an index inside it.
int64_t fwd(int64_t stage, int64_t index) {
  return stage * 1000000 + index;
}

std::string join(const std::string& prefix, const std::string& leaf) {
  return prefix.empty() ? leaf : prefix + "." + leaf;
}

// The types that end a walk up to a parameter's block (ParamInfo::block).
const std::set<std::string>& blockTypes() {
  static const std::set<std::string> types = {"VisionTransformer",
                                              "PerceiverResampler",
                                              "GatedCrossAttentionBlock",
                                              "DecoderLayer",
                                              "Embedding",
                                              "OutputHead",
                                              "CausalLM",
                                              "Flamingo"};
  return types;
}

// Adds modules and parameters in the model's registration order.
class Builder {
 public:
  explicit Builder(ParamInventory* inv) : inv_(inv) {}

  // A module at `path`; containers are not callable.
  void module(const std::string& path, const std::string& type, int64_t forward, bool callable = true) {
    inv_->modules.push_back({path, type, callable, false, forward});
    order_[path] = forward;
    type_[path] = type;
  }
  void param(const std::string& module_path, const std::string& leaf, Shape shape, bool trainable) {
    ParamInfo p;
    p.name = join(module_path, leaf);
    p.numel = 1;
    for (auto d : shape) p.numel *= d;
    p.shape = std::move(shape);
    p.module = module_path;
    p.moduleType = type_.at(module_path);
    p.trainable = trainable;
    p.forwardOrder = order_.at(module_path);
    inv_->params.push_back(std::move(p));
  }
  // Leaf modules with their parameters (children take the parent's forward position).
  void linear(const std::string& path, int64_t in, int64_t out, bool bias, bool trainable, int64_t forward) {
    module(path, "Linear", forward);
    param(path, "weight", {out, in}, trainable);
    if (bias) param(path, "bias", {out}, trainable);
  }
  void layerNorm(const std::string& path, int64_t dim, bool bias, bool trainable, int64_t forward) {
    module(path, "LayerNorm", forward);
    param(path, "weight", {dim}, trainable);
    if (bias) param(path, "bias", {dim}, trainable);
  }
  void rmsNorm(const std::string& path, int64_t dim, int64_t forward) {
    module(path, "RMSNorm", forward);
    param(path, "weight", {dim}, false);
  }
  void embedding(const std::string& path, int64_t rows, int64_t dim, bool trainable, int64_t forward) {
    module(path, "Embedding", forward);
    param(path, "weight", {rows, dim}, trainable);
  }
  // Flamingo's FeedForward: 0 LayerNorm, 1 Linear up, 3 Linear down (no biases).
  void feedForward(const std::string& path, int64_t dim, int64_t mult, bool trainable, int64_t forward) {
    module(path, "FeedForward", forward);
    layerNorm(join(path, "0"), dim, true, trainable, forward);
    linear(join(path, "1"), dim, mult * dim, false, trainable, forward);
    linear(join(path, "3"), mult * dim, dim, false, trainable, forward);
  }

 private:
  ParamInventory* inv_;
  std::map<std::string, int64_t> order_;
  std::map<std::string, std::string> type_;
};

// ---------------------------------------------------------------- vision, perceiver, gated block

void addVision(Builder& b, const protocol::VisionConfig& v) {
  const std::string p = "vision_encoder";
  const int64_t w = v.width;
  const int64_t grid = v.image_size / v.patch_size;
  const auto hidden = static_cast<int64_t>(static_cast<double>(w) * (v.mlp_ratio > 0 ? v.mlp_ratio : 4.0));
  b.module(p, "VisionTransformer", fwd(1, 0));
  // open_clip's order: own parameters first (class_embedding, positional_embedding, proj).
  b.param(p, "class_embedding", {w}, false);
  b.param(p, "positional_embedding", {grid * grid + 1, w}, false);
  b.param(p, "proj", {w, v.output_dim}, false);
  b.module(p + ".conv1", "Conv2d", fwd(1, 1));
  b.param(p + ".conv1", "weight", {w, 3, v.patch_size, v.patch_size}, false);
  b.layerNorm(p + ".ln_pre", w, true, false, fwd(1, 2));
  b.module(p + ".transformer", "Container", fwd(1, 3), false);
  b.module(p + ".transformer.resblocks", "ModuleList", fwd(1, 3), false);
  for (int64_t i = 0; i < v.layers; ++i) {
    const auto blk = p + ".transformer.resblocks." + std::to_string(i);
    const auto f = fwd(1, 10 + i);
    b.module(blk, "ResidualAttentionBlock", f);
    b.layerNorm(blk + ".ln_1", w, true, false, f);
    b.module(blk + ".attn", "VisionAttention", f);
    b.param(blk + ".attn", "in_proj_weight", {3 * w, w}, false);
    b.param(blk + ".attn", "in_proj_bias", {3 * w}, false);
    b.linear(blk + ".attn.out_proj", w, w, true, false, f);
    b.layerNorm(blk + ".ln_2", w, true, false, f);
    b.module(blk + ".mlp", "VisionMlp", f);
    b.linear(blk + ".mlp.c_fc", w, hidden, true, false, f);
    b.linear(blk + ".mlp.c_proj", hidden, w, true, false, f);
  }
  b.layerNorm(p + ".ln_post", w, true, false, fwd(1, 10 + v.layers));
}

void addPerceiver(Builder& b, const protocol::ModelConfig& m) {
  const std::string p = "perceiver";
  const int64_t d = m.vision.width;
  const auto& c = m.perceiver;
  const int64_t inner = c.heads * c.head_dim;
  b.module(p, "PerceiverResampler", fwd(2, 0));
  b.param(p, "latents", {c.num_latents, d}, true);
  b.module(p + ".layers", "ModuleList", fwd(2, 1), false);
  for (int64_t i = 0; i < c.depth; ++i) {
    const auto layer = p + ".layers." + std::to_string(i);
    const auto f = fwd(2, 10 + i);
    b.module(layer, "PerceiverLayer", f);
    b.module(layer + ".0", "PerceiverAttention", f);
    b.layerNorm(layer + ".0.norm_media", d, true, true, f);
    b.layerNorm(layer + ".0.norm_latents", d, true, true, f);
    b.linear(layer + ".0.to_q", d, inner, false, true, f);
    b.linear(layer + ".0.to_kv", d, 2 * inner, false, true, f);
    b.linear(layer + ".0.to_out", inner, d, false, true, f);
    b.feedForward(layer + ".1", d, c.ff_mult, true, f);
  }
  b.layerNorm(p + ".norm", d, true, true, fwd(2, 10 + c.depth));
}

void addGatedBlock(Builder& b, const std::string& p, const protocol::ModelConfig& m, int64_t f) {
  const int64_t d = m.lm.width;
  const int64_t inner = m.cross_attn.heads * m.cross_attn.head_dim;
  b.module(p, "GatedCrossAttentionBlock", f);
  b.param(p, "attn_gate", {1}, true);
  b.param(p, "ff_gate", {1}, true);
  b.module(p + ".attn", "MaskedCrossAttention", f);
  b.layerNorm(p + ".attn.norm", d, true, true, f);
  b.linear(p + ".attn.to_q", d, inner, false, true, f);
  b.linear(p + ".attn.to_kv", m.vision.width, 2 * inner, false, true, f);
  b.linear(p + ".attn.to_out", inner, d, false, true, f);
  b.feedForward(p + ".ff", d, m.cross_attn.ff_mult, true, f);
}

// ---------------------------------------------------------------- LM families

struct Family {
  std::string layers;     // decoderLayersPath()
  std::string embedding;  // inputEmbeddingPath()
  std::string head;       // outputHeadPath()
};

Family familyPaths(const std::string& family) {
  if (family == "opt") return {"model.decoder.layers", "model.decoder.embed_tokens", "lm_head"};
  if (family == "mpt") return {"transformer.blocks", "transformer.wte", "lm_head"};
  if (family == "gpt_neox") return {"gpt_neox.layers", "gpt_neox.embed_in", "embed_out"};
  return {"model.layers", "model.embed_tokens", "lm_head"};  // llama
}

// One family's decoder layer (frozen) under `p`.
void addDecoderLayer(Builder& b, const std::string& p, const protocol::LmConfig& lm, bool mosaic, bool qk_ln,
                     int64_t f) {
  const int64_t d = lm.width;
  const int64_t ff = lm.ffn_dim;
  b.module(p, "DecoderLayer", f);
  if (lm.family == "opt") {
    b.module(p + ".self_attn", "OptAttention", f);
    for (const char* proj : {"k_proj", "v_proj", "q_proj", "out_proj"})
      b.linear(p + ".self_attn." + proj, d, d, true, false, f);
    b.layerNorm(p + ".self_attn_layer_norm", d, true, false, f);
    b.linear(p + ".fc1", d, ff, true, false, f);
    b.linear(p + ".fc2", ff, d, true, false, f);
    b.layerNorm(p + ".final_layer_norm", d, true, false, f);
  } else if (lm.family == "mpt") {
    b.layerNorm(p + (mosaic ? ".ln_1" : ".norm_1"), d, false, false, f);
    b.module(p + ".attn", "MptAttention", f);
    b.linear(p + ".attn.Wqkv", d, 3 * d, false, false, f);
    if (qk_ln) {
      b.layerNorm(p + ".attn.q_ln", d, false, false, f);
      b.layerNorm(p + ".attn.k_ln", d, false, false, f);
    }
    b.linear(p + ".attn.out_proj", d, d, false, false, f);
    b.layerNorm(p + (mosaic ? ".ln_2" : ".norm_2"), d, false, false, f);
    const auto mlp = p + (mosaic ? ".mlp" : ".ffn");
    b.module(mlp, "MptMlp", f);
    b.linear(mlp + (mosaic ? ".mlp_up" : ".up_proj"), d, ff, false, false, f);
    b.linear(mlp + (mosaic ? ".mlp_down" : ".down_proj"), ff, d, false, false, f);
  } else if (lm.family == "gpt_neox") {
    b.layerNorm(p + ".input_layernorm", d, true, false, f);
    b.layerNorm(p + ".post_attention_layernorm", d, true, false, f);
    b.module(p + ".attention", "GptNeoxAttention", f);
    b.linear(p + ".attention.query_key_value", d, 3 * d, true, false, f);
    b.linear(p + ".attention.dense", d, d, true, false, f);
    b.module(p + ".mlp", "GptNeoxMlp", f);
    b.linear(p + ".mlp.dense_h_to_4h", d, ff, true, false, f);
    b.linear(p + ".mlp.dense_4h_to_h", ff, d, true, false, f);
  } else {  // llama
    b.module(p + ".self_attn", "LlamaAttention", f);
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"})
      b.linear(p + ".self_attn." + proj, d, d, false, false, f);
    b.module(p + ".mlp", "LlamaMlp", f);
    b.linear(p + ".mlp.gate_proj", d, ff, false, false, f);
    b.linear(p + ".mlp.down_proj", ff, d, false, false, f);
    b.linear(p + ".mlp.up_proj", d, ff, false, false, f);
    b.rmsNorm(p + ".input_layernorm", d, f);
    b.rmsNorm(p + ".post_attention_layernorm", d, f);
  }
}

// Registers the plain containers on the way to `path` that do not exist yet.
void containers(Builder& b, std::set<std::string>* made, const std::string& path, int64_t f) {
  std::string prefix = "lang_encoder";
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    if (dot == std::string::npos) return;
    prefix = "lang_encoder." + path.substr(0, dot);
    if (made->insert(prefix).second) b.module(prefix, "Container", f, false);
    start = dot + 1;
  }
}

void addLanguageModel(Builder& b, ParamInventory* inv, const protocol::ModelConfig& m) {
  const auto& lm = m.lm;
  const std::string p = "lang_encoder";
  const auto paths = familyPaths(lm.family);
  // LmOptions::fromConfig's knobs (NOTE [LM resolution]); only MPT-1B's and OPT's post-LN change
  // parameters. A config.json the resolver refuses is validate.cpp's error; the defaults stand here.
  const auto resolved = protocol::resolveLm(lm);
  const protocol::LmArchitecture arch = resolved.isOk() ? resolved->arch : protocol::LmArchitecture{};
  const bool mosaic = lm.family == "mpt" && arch.mosaic_gpt_names;
  const bool qk_ln = lm.family == "mpt" && arch.qk_ln;
  const int64_t rows =
      m.tokens.vocab_size > 0 ? m.tokens.vocab_size : lm.vocab_size;  // resize_token_embeddings
  const int64_t d = lm.width;
  const int64_t n = lm.layers;
  const int64_t embed_stage = 3;
  const int64_t norm_stage = 4 + n;
  const int64_t head_stage = 5 + n;
  std::set<std::string> made;

  b.module(p, "CausalLM", fwd(embed_stage, 0));
  containers(b, &made, paths.embedding, fwd(embed_stage, 0));
  b.embedding(p + "." + paths.embedding, rows, d, !m.freeze_lm_embeddings, fwd(embed_stage, 1));
  if (lm.family == "opt") {
    // OPTDecoder's order: embed_tokens, embed_positions, final_layer_norm, layers.
    b.embedding(p + ".model.decoder.embed_positions", lm.max_positions + kOptPositionOffset, d, false,
                fwd(embed_stage, 2));
    if (arch.layer_norm_before)
      b.layerNorm(p + ".model.decoder.final_layer_norm", d, true, false, fwd(norm_stage, 0));
  }
  containers(b, &made, paths.layers, fwd(embed_stage, 0));
  const auto list = p + "." + paths.layers;
  b.module(list, "ModuleList", fwd(4, 0), false);
  for (int64_t i = 0; i < n; ++i) {
    const auto layer = list + "." + std::to_string(i);
    b.module(layer, "FlamingoLayer", fwd(4 + i, 0));
    if (hasCrossAttentionAt(i, m.cross_attn.every_n_layers))
      addGatedBlock(b, layer + ".gated_cross_attn_layer", m, fwd(4 + i, 1));
    addDecoderLayer(b, layer + ".decoder_layer", lm, mosaic, qk_ln, fwd(4 + i, 2));
  }
  if (lm.family == "mpt") {
    b.layerNorm(p + (mosaic ? ".transformer.ln_f" : ".transformer.norm_f"), d, false, false,
                fwd(norm_stage, 0));
  } else if (lm.family == "gpt_neox") {
    b.layerNorm(p + ".gpt_neox.final_layer_norm", d, true, false, fwd(norm_stage, 0));
  } else if (lm.family == "llama") {
    b.rmsNorm(p + ".model.norm", d, fwd(norm_stage, 0));
  }
  const auto head = p + "." + paths.head;
  if (!lm.tied_head) {
    b.module(head, "OutputHead", fwd(head_stage, 0));
    b.param(head, "weight", {rows, d}, false);  // an untied head stays frozen
    return;
  }
  // Tied: the head is the embedding's tensor; its state-dict name is an alias.
  inv->modules.push_back({head, "OutputHead", true, true, fwd(head_stage, 0)});
  TiedGroup group;
  group.param = p + "." + paths.embedding + ".weight";
  group.aliases = {head + ".weight"};
  group.aliasModules = {head};
  inv->tiedGroups.push_back(group);
}

Status checkShapes(const protocol::ModelConfig& m) {
  static const std::set<std::string> families = {"opt", "mpt", "gpt_neox", "llama"};
  if (families.count(m.lm.family) == 0)
    return Status::invalidArgument("model.lm.family: unknown LM family '" + m.lm.family +
                                   "' (known: opt, mpt, gpt_neox, llama)");
  auto positive = [](int64_t v, const std::string& field) -> Status {
    if (v > 0) return Status::ok();
    return Status::invalidArgument(field + ": must be positive, got " + std::to_string(v));
  };
  for (const auto& [v, field] : std::vector<std::pair<int64_t, std::string>>{
           {m.vision.width, "model.vision.width"},
           {m.vision.patch_size, "model.vision.patch_size"},
           {m.vision.heads, "model.vision.heads"},
           {m.lm.width, "model.lm.width"},
           {m.lm.heads, "model.lm.heads"},
           {m.lm.layers, "model.lm.layers"},
           {m.cross_attn.every_n_layers, "model.cross_attn.every_n_layers"}}) {
    if (auto s = positive(v, field); !s) return s;
  }
  if (m.vision.image_size % m.vision.patch_size != 0)
    return Status::invalidArgument("model.vision.image_size: " + std::to_string(m.vision.image_size) +
                                   " is not a multiple of patch_size " + std::to_string(m.vision.patch_size));
  if (m.vision.width % m.vision.heads != 0)
    return Status::invalidArgument("model.vision.width: " + std::to_string(m.vision.width) +
                                   " is not divisible by heads " + std::to_string(m.vision.heads));
  if (m.lm.width % m.lm.heads != 0)
    return Status::invalidArgument("model.lm.width: " + std::to_string(m.lm.width) +
                                   " is not divisible by heads " + std::to_string(m.lm.heads));
  return Status::ok();
}

// ParamInfo::block: the nearest enclosing module of a block type.
void assignBlocks(ParamInventory* inv) {
  std::map<std::string, std::string> types;
  for (const auto& m : inv->modules) types[m.path] = m.type;
  for (auto& p : inv->params) {
    std::string path = p.module;
    while (true) {
      const auto& type = types.at(path);
      if (blockTypes().count(type) != 0 || path.empty()) {
        p.block = path;
        p.blockType = type;
        break;
      }
      const auto dot = path.rfind('.');
      path = dot == std::string::npos ? "" : path.substr(0, dot);
    }
  }
  for (size_t g = 0; g < inv->tiedGroups.size(); ++g) {
    for (auto& p : inv->params) {
      if (p.name == inv->tiedGroups[g].param) p.tiedGroup = static_cast<int>(g);
    }
  }
}

}  // namespace

bool hasCrossAttentionAt(int64_t layer, int64_t every_n_layers) {
  return (layer + 1) % every_n_layers == 0;
}

int64_t ParamInventory::numel() const {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel;
  return n;
}

int64_t ParamInventory::trainableNumel() const {
  int64_t n = 0;
  for (const auto& p : params) n += p.trainable ? p.numel : 0;
  return n;
}

const ModuleInfo* ParamInventory::module(const std::string& path) const {
  for (const auto& m : modules) {
    if (m.path == path) return &m;
  }
  return nullptr;
}

const ParamInfo* ParamInventory::param(const std::string& name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

protocol::StatusOr<ParamInventory> buildParamInventory(const protocol::ModelConfig& model) {
  if (auto s = checkShapes(model); !s) return s;
  ParamInventory inv;
  inv.family = model.lm.family;
  Builder b(&inv);
  b.module("", "Flamingo", fwd(0, 0));
  // OpenFlamingo's attribute order: vision_encoder, perceiver, lang_encoder.
  addVision(b, model.vision);
  addPerceiver(b, model);
  addLanguageModel(b, &inv, model);
  assignBlocks(&inv);
  return inv;
}

}  // namespace fs::fsdp_plan

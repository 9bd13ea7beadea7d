#include "backend/protocol/config/model_catalog.h"

#include "backend/protocol/config/hf_lm_config.h"

namespace fs::protocol {
namespace {

KnownLm lm(std::string id, std::string family, int64_t vocab, int64_t width, int64_t layers, int64_t heads,
           int64_t ffn, int64_t positions, bool tied, LmArchitecture arch = {}) {
  LmConfig c;
  c.path = id;
  c.tokenizer_path = id;
  c.family = std::move(family);
  c.vocab_size = vocab;
  c.width = width;
  c.layers = layers;
  c.heads = heads;
  c.ffn_dim = ffn;
  c.max_positions = positions;
  c.tied_head = tied;
  return {std::move(id), c, arch};
}

// The knobs of the catalog's models, from their config.json files.
LmArchitecture mosaicGpt() {  // MPT-1B (MosaicGPT class): attn_qk_ln, ln_1 / mlp.mlp_up / ln_f names
  LmArchitecture a;
  a.qk_ln = true;
  a.mosaic_gpt_names = true;
  return a;
}
LmArchitecture pythia() {  // rotary_pct 0.25, use_parallel_residual true
  LmArchitecture a;
  a.rotary_pct = 0.25;
  a.parallel_residual = true;
  return a;
}
LmArchitecture llama2() {  // rms_norm_eps 1e-5
  LmArchitecture a;
  a.norm_eps = 1e-5;
  return a;
}

KnownVision vit(std::string name, int64_t image, int64_t patch, int64_t width, int64_t layers, int64_t heads,
                int64_t outDim) {
  VisionConfig v;
  v.path = name;
  v.pretrained = "openai";
  v.image_size = image;
  v.patch_size = patch;
  v.width = width;
  v.layers = layers;
  v.heads = heads;
  v.mlp_ratio = 4.0;
  v.output_dim = outDim;
  v.quick_gelu = true;
  v.ln_post_on_tokens = false;
  return {std::move(name), v};
}

std::string lastComponent(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '/') t.pop_back();
  const auto slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

}  // namespace

const std::vector<KnownLm>& knownLms() {
  // From each model's config.json (vocab = embedding rows before new tokens).
  static const std::vector<KnownLm> lms = {
      lm("facebook/opt-125m", "opt", 50272, 768, 12, 12, 3072, 2048, true),
      lm("facebook/opt-1.3b", "opt", 50272, 2048, 24, 32, 8192, 2048, true),
      lm("facebook/opt-2.7b", "opt", 50272, 2560, 32, 32, 10240, 2048, true),
      lm("facebook/opt-6.7b", "opt", 50272, 4096, 32, 32, 16384, 2048, true),
      lm("anas-awadalla/mpt-1b-redpajama-200b", "mpt", 50432, 2048, 24, 16, 8192, 2048, true, mosaicGpt()),
      lm("anas-awadalla/mpt-1b-redpajama-200b-dolly", "mpt", 50432, 2048, 24, 16, 8192, 2048, true,
         mosaicGpt()),
      lm("anas-awadalla/mpt-7b", "mpt", 50432, 4096, 32, 32, 16384, 2048, true),
      lm("togethercomputer/RedPajama-INCITE-Base-3B-v1", "gpt_neox", 50432, 2560, 32, 32, 10240, 2048, false),
      lm("togethercomputer/RedPajama-INCITE-Instruct-3B-v1", "gpt_neox", 50432, 2560, 32, 32, 10240, 2048,
         false),
      lm("EleutherAI/pythia-160m", "gpt_neox", 50304, 768, 12, 12, 3072, 2048, false, pythia()),
      lm("EleutherAI/pythia-410m", "gpt_neox", 50304, 1024, 24, 16, 4096, 2048, false, pythia()),
      lm("EleutherAI/pythia-1b", "gpt_neox", 50304, 2048, 16, 8, 8192, 2048, false, pythia()),
      lm("EleutherAI/pythia-1.4b", "gpt_neox", 50304, 2048, 24, 16, 8192, 2048, false, pythia()),
      lm("huggyllama/llama-7b", "llama", 32000, 4096, 32, 32, 11008, 2048, false),
      lm("meta-llama/Llama-2-7b-hf", "llama", 32000, 4096, 32, 32, 11008, 4096, false, llama2()),
  };
  return lms;
}

const std::vector<KnownVision>& knownVisionTowers() {
  static const std::vector<KnownVision> towers = {
      vit("ViT-B-32", 224, 32, 768, 12, 12, 512),   vit("ViT-B-16", 224, 16, 768, 12, 12, 512),
      vit("ViT-L-14", 224, 14, 1024, 24, 16, 768),  vit("ViT-L-14-336", 336, 14, 1024, 24, 16, 768),
      vit("ViT-H-14", 224, 14, 1280, 32, 16, 1024),
  };
  return towers;
}

std::optional<KnownLm> findKnownLm(const std::string& pathOrId) {
  if (pathOrId.empty()) return std::nullopt;
  for (const auto& k : knownLms()) {
    if (k.id == pathOrId) return k;
  }
  const std::string last = lastComponent(pathOrId);
  for (const auto& k : knownLms()) {
    if (lastComponent(k.id) == last) return k;
  }
  return std::nullopt;
}

std::optional<KnownVision> findKnownVision(const std::string& name) {
  for (const auto& k : knownVisionTowers()) {
    if (k.name == name) return k;
  }
  return std::nullopt;
}

bool applyKnownShapes(ModelConfig* model) {
  bool known = false;
  if (hasHfConfigJson(model->lm.path)) {
    if (auto hf = readHfLmConfig(model->lm.path)) {
      LmConfig shape = hf->shape;
      shape.path = model->lm.path;
      shape.tokenizer_path = model->lm.tokenizer_path;
      model->lm = shape;
      known = true;
    }
  } else if (auto k = findKnownLm(model->lm.path)) {
    LmConfig shape = k->shape;
    shape.path = model->lm.path;
    shape.tokenizer_path = model->lm.tokenizer_path;
    model->lm = shape;
    known = true;
  }
  if (auto v = findKnownVision(model->vision.path)) {
    VisionConfig shape = v->shape;
    shape.pretrained = model->vision.pretrained;
    shape.quick_gelu = model->vision.pretrained == "openai";
    shape.ln_post_on_tokens = model->vision.ln_post_on_tokens;
    model->vision = shape;
    known = true;
  }
  return known;
}

}  // namespace fs::protocol

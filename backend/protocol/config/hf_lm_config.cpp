#include "backend/protocol/config/hf_lm_config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

namespace fs::protocol {
namespace {

using Json = nlohmann::json;

std::string shown(const Json& v) {
  return v.dump();
}

// Reads typed fields of one JSON object; the first problem is kept and named
// "<file>: <prefix><key> ...". Every accessor returns a usable value after an error.
class Fields {
 public:
  Fields(const Json& object, std::string file, std::string prefix = "")
      : j_(object), file_(std::move(file)), prefix_(std::move(prefix)) {}

  const Status& status() const { return status_; }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const Json& raw(const char* key) const {
    static const Json null;
    return j_.contains(key) ? j_.at(key) : null;
  }
  std::string name(const char* key) const { return prefix_ + key; }

  int64_t integer(const char* key) {
    if (!has(key)) return fail(key, "is missing (an integer is required)"), 0;
    return integerOr(key, 0);
  }
  int64_t integerOr(const char* key, int64_t fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())
      return static_cast<int64_t>(v.get<double>());
    fail(key, "is " + shown(v) + "; an integer is required");
    return fallback;
  }
  double numberOr(const char* key, double fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (v.is_number()) return v.get<double>();
    fail(key, "is " + shown(v) + "; a number is required");
    return fallback;
  }
  // A dropout probability in [0, 1]; unset when absent or null.
  std::optional<double> probability(const char* key) {
    if (!has(key)) return std::nullopt;
    const double p = numberOr(key, 0.0);
    if (p < 0.0 || p > 1.0) fail(key, "is " + shown(raw(key)) + "; a probability in [0, 1] is required");
    return p;
  }
  bool booleanOr(const char* key, bool fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (v.is_boolean()) return v.get<bool>();
    fail(key, "is " + shown(v) + "; true or false is required");
    return fallback;
  }
  std::string stringOr(const char* key, const std::string& fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (v.is_string()) return v.get<std::string>();
    fail(key, "is " + shown(v) + "; a string is required");
    return fallback;
  }

  // Refusals: the field asks for something backend/model does not compute.
  void requireNull(const char* key, const std::string& why) {
    if (has(key)) unsupported(key, why);
  }
  void requireBool(const char* key, bool fallback, bool wanted, const std::string& why) {
    if (booleanOr(key, fallback) != wanted) unsupported(key, why);
  }
  void requireString(const char* key, const std::string& fallback, const std::vector<std::string>& allowed,
                     const std::string& why) {
    const std::string v = stringOr(key, fallback);
    for (const auto& a : allowed)
      if (v == a) return;
    unsupported(key, why);
  }
  void unsupported(const char* key, const std::string& why) {
    if (status_.isOk())
      status_ = Status::unsupported(file_ + ": " + name(key) + " = " + shown(raw(key)) +
                                    " is not supported: " + why);
  }
  void fail(const char* key, const std::string& what) {
    if (status_.isOk()) status_ = Status::invalidArgument(file_ + ": " + name(key) + " " + what);
  }
  void adopt(const Status& s) {
    if (status_.isOk() && !s.isOk()) status_ = s;
  }

 private:
  const Json& j_;
  std::string file_;
  std::string prefix_;
  Status status_;
};

// vocab_size / hidden / layers / heads / positions keys shared by the HF families.
void readCommonShape(Fields& f, HfLmConfig* out, const char* widthKey, const char* layersKey,
                     const char* headsKey, const char* positionsKey) {
  LmConfig& s = out->shape;
  s.vocab_size = f.integer("vocab_size");
  s.width = f.integer(widthKey);
  s.layers = f.integer(layersKey);
  s.heads = f.integer(headsKey);
  s.max_positions = f.integer(positionsKey);
  out->keys = {{"family", "model_type"},
               {"vocab_size", "vocab_size"},
               {"width", widthKey},
               {"layers", layersKey},
               {"heads", headsKey},
               {"max_positions", positionsKey},
               {"tied_head", "tie_word_embeddings"}};
}

// Rotary settings of transformers 5 (rope_parameters) or 4 (rope_theta / rotary_emb_base,
// rotary_pct, rope_scaling). Returns {fraction, base}.
std::pair<double, double> readRope(Fields& f, const Json& root, const std::string& file, const char* baseKey,
                                   const char* fractionKey, double defaultFraction) {
  double fraction = f.numberOr(fractionKey, defaultFraction);
  double base = f.numberOr(baseKey, 10000.0);
  f.requireNull("rope_scaling",
                "the engine's rotary embedding is plain RoPE, without NTK, linear, YaRN or llama3 scaling");
  if (root.contains("rope_parameters") && !root.at("rope_parameters").is_null()) {
    const Json& rp = root.at("rope_parameters");
    if (!rp.is_object()) {
      f.fail("rope_parameters", "is " + shown(rp) + "; an object is required");
      return {fraction, base};
    }
    Fields r(rp, file, "rope_parameters.");
    r.requireString("rope_type", "default", {"default"},
                    "the engine's rotary embedding is plain RoPE (\"default\"), without NTK, linear, YaRN or "
                    "llama3 scaling");
    base = r.numberOr("rope_theta", base);
    fraction = r.numberOr("partial_rotary_factor", fraction);
    f.adopt(r.status());
  }
  return {fraction, base};
}

void readOpt(Fields& f, HfLmConfig* out) {
  readCommonShape(f, out, "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "max_position_embeddings");
  out->shape.ffn_dim = f.integer("ffn_dim");
  out->keys["ffn_dim"] = "ffn_dim";
  out->shape.tied_head = f.booleanOr("tie_word_embeddings", true);
  out->arch.layer_norm_before = f.booleanOr("do_layer_norm_before", true);
  out->arch.pad_token_id = f.has("pad_token_id") ? f.integerOr("pad_token_id", 1) : -1;
  // OPTDecoderLayer: `dropout` after attention and after fc2; none on the embeddings.
  out->arch.dropout = f.probability("dropout");
  out->arch.attention_dropout = f.probability("attention_dropout");
  if (f.has("word_embed_proj_dim") && f.integerOr("word_embed_proj_dim", 0) != out->shape.width)
    f.unsupported("word_embed_proj_dim",
                  "the engine's OPT has no project_in / project_out (OPT-350m); it must equal hidden_size");
  f.requireString("activation_function", "relu", {"relu"}, "OPT's decoder is implemented with ReLU only");
  f.requireBool("enable_bias", true, true, "OPT's linear layers are implemented with biases");
  f.requireBool("layer_norm_elementwise_affine", true, true,
                "OPT's LayerNorms are implemented with weight and bias");
  f.requireBool("_remove_final_layer_norm", false, false, "the final LayerNorm is always built when pre-LN");
  if (f.numberOr("layerdrop", 0.0) != 0.0)
    f.unsupported("layerdrop", "the engine runs every layer (no LayerDrop)");
}

void readGptNeox(Fields& f, const Json& root, HfLmConfig* out) {
  readCommonShape(f, out, "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "max_position_embeddings");
  out->shape.ffn_dim = f.integer("intermediate_size");
  out->keys["ffn_dim"] = "intermediate_size";
  out->shape.tied_head = f.booleanOr("tie_word_embeddings", false);
  // transformers' GPTNeoXConfig defaults: rotary_pct 0.25, use_parallel_residual true.
  const auto [fraction, base] = readRope(f, root, out->file, "rotary_emb_base", "rotary_pct", 0.25);
  out->arch.rotary_pct = fraction;
  out->arch.rotary_base = base;
  out->arch.parallel_residual = f.booleanOr("use_parallel_residual", true);
  out->arch.norm_eps = f.numberOr("layer_norm_eps", 1e-5);
  // GPTNeoXModel: `hidden_dropout` on the embeddings and after attention and MLP.
  out->arch.dropout = f.probability("hidden_dropout");
  out->arch.embedding_dropout = out->arch.dropout;
  out->arch.attention_dropout = f.probability("attention_dropout");
  f.requireString("hidden_act", "gelu", {"gelu"}, "GPT-NeoX's MLP is implemented with exact GELU only");
  f.requireBool("attention_bias", true, true, "GPT-NeoX's attention is implemented with biases");
  const int64_t headDim = out->shape.heads > 0 ? out->shape.width / out->shape.heads : 0;
  const auto rot = static_cast<int64_t>(static_cast<double>(headDim) * fraction);
  if (f.status().isOk() && (rot <= 0 || rot % 2 != 0))
    f.fail(root.contains("rope_parameters") ? "rope_parameters" : "rotary_pct",
           "gives " + std::to_string(rot) + " rotary channels of head_dim " + std::to_string(headDim) +
               "; a positive even number is required");
}

void readLlama(Fields& f, const Json& root, HfLmConfig* out) {
  readCommonShape(f, out, "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "max_position_embeddings");
  out->shape.ffn_dim = f.integer("intermediate_size");
  out->keys["ffn_dim"] = "intermediate_size";
  out->shape.tied_head = f.booleanOr("tie_word_embeddings", false);
  const auto [fraction, base] = readRope(f, root, out->file, "rope_theta", "partial_rotary_factor", 1.0);
  if (fraction != 1.0) {
    // Named where it was read: transformers 5 writes it inside rope_parameters.
    const char* why = "LLaMA is implemented with rotary on the whole head";
    const Json& rp = root.contains("rope_parameters") ? root.at("rope_parameters") : Json();
    if (rp.is_object() && rp.contains("partial_rotary_factor")) {
      Fields r(rp, out->file, "rope_parameters.");
      r.unsupported("partial_rotary_factor", why);
      f.adopt(r.status());
    } else {
      f.unsupported("partial_rotary_factor", why);
    }
  }
  out->arch.rotary_base = base;
  out->arch.norm_eps = f.numberOr("rms_norm_eps", 1e-6);
  out->arch.attention_dropout = f.probability("attention_dropout");  // LLaMA has no other dropout
  if (f.has("num_key_value_heads") && f.integerOr("num_key_value_heads", 0) != out->shape.heads)
    f.unsupported("num_key_value_heads",
                  "the engine's LLaMA has one key/value head per query head (no grouped-query attention); it "
                  "must equal num_attention_heads");
  if (f.has("head_dim") && out->shape.heads > 0 &&
      f.integerOr("head_dim", 0) != out->shape.width / out->shape.heads)
    f.unsupported("head_dim", "it must be hidden_size / num_attention_heads");
  f.requireBool("attention_bias", false, false, "LLaMA's attention is implemented without biases");
  f.requireBool("mlp_bias", false, false, "LLaMA's MLP is implemented without biases");
  f.requireString("hidden_act", "silu", {"silu"}, "LLaMA's MLP is implemented with SiLU only");
}

// MPT's attention settings: `a` reads attn_config (mpt) or the top level (mosaic_gpt, attn_ prefixed names).
void readMptAttention(Fields& a, Fields& top, HfLmConfig* out, bool mosaic) {
  const char* qkLn = mosaic ? "attn_qk_ln" : "qk_ln";
  const char* clip = mosaic ? "attn_clip_qkv" : "clip_qkv";
  a.requireBool("alibi", mosaic ? false : true, true,
                "MPT is implemented with ALiBi only (no learned positions)");
  out->arch.alibi_bias_max = a.numberOr("alibi_bias_max", 8.0);
  if (!mosaic && out->arch.alibi_bias_max != 8.0)
    a.unsupported(
        "alibi_bias_max",
        "transformers' MptModel ignores it and always uses 8; a checkpoint trained with another range "
        "would compute differently there");
  a.requireNull(clip, "the engine's MPT does not clip q, k, v");
  if (a.has("softmax_scale") && out->shape.heads > 0) {
    const double wanted = 1.0 / std::sqrt(static_cast<double>(out->shape.width / out->shape.heads));
    if (std::abs(a.numberOr("softmax_scale", wanted) - wanted) > 1e-12 * wanted)
      a.unsupported("softmax_scale", "only 1/sqrt(head_dim) is implemented");
  }
  a.requireString("attn_impl", "torch", {"torch", "flash", "triton"},
                  "known kernels are torch, flash and triton (all the same math)");
  a.requireString("attn_type", "multihead_attention", {"multihead_attention"},
                  "the engine's MPT is multi-head attention only (no multi-query / grouped-query)");
  a.requireBool("prefix_lm", false, false, "the engine's MPT is causal only (no prefix-LM mask)");
  a.requireBool("attn_uses_sequence_id", false, false,
                "the engine's MPT masks by position only (no sequence ids)");
  out->arch.qk_ln = a.booleanOr(qkLn, false);
  // transformers' MPT: attn_pdrop on the attention weights and after attention and MLP (it ignores
  // resid_pdrop and emb_pdrop); MosaicGPT: attn_pdrop, resid_pdrop, emb_pdrop as named.
  out->arch.attention_dropout = a.probability("attn_pdrop");
  if (mosaic) {
    out->arch.dropout = top.probability("resid_pdrop");
    out->arch.embedding_dropout = top.probability("emb_pdrop");
  } else {
    out->arch.dropout = out->arch.attention_dropout;
  }
  if (!mosaic && out->arch.qk_ln)
    a.unsupported(qkLn,
                  "transformers' MptForCausalLM has no QK LayerNorm (only MosaicGPT, model_type mosaic_gpt)");
  top.adopt(a.status());
}

void readMpt(Fields& f, const Json& root, HfLmConfig* out, bool mosaic) {
  readCommonShape(f, out, "d_model", "n_layers", "n_heads", "max_seq_len");
  out->shape.family = "mpt";
  out->shape.tied_head = f.booleanOr("tie_word_embeddings", true);
  out->arch.mosaic_gpt_names = mosaic;
  out->arch.norm_eps = f.numberOr("layer_norm_epsilon", 1e-5);
  const char* ratioKey = mosaic ? "mlp_ratio" : "expansion_ratio";
  const Json& ratio = f.raw(ratioKey);
  if (!f.has(ratioKey)) {
    out->shape.ffn_dim = 4 * out->shape.width;
  } else if (!ratio.is_number() ||
             ratio.get<double>() * out->shape.width != std::floor(ratio.get<double>() * out->shape.width)) {
    f.unsupported(ratioKey, "d_model * ratio must be a whole FFN width");
  } else {
    out->shape.ffn_dim = static_cast<int64_t>(ratio.get<double>() * out->shape.width);
    if (!mosaic && out->shape.ffn_dim != 4 * out->shape.width)
      f.unsupported(ratioKey, "transformers' MptMLP is always 4 * d_model wide; only 4 loads there");
  }
  out->keys["ffn_dim"] = ratioKey;
  f.requireBool("no_bias", true, true, "MPT is implemented without biases");
  f.requireNull("logit_scale", "the engine's MPT head does not scale logits");
  if (f.numberOr("embedding_fraction", 1.0) != 1.0)
    f.unsupported("embedding_fraction", "the engine's MPT does not scale the embedding gradient");
  f.requireString("norm_type", "low_precision_layernorm", {"low_precision_layernorm", "layernorm"},
                  "MPT is implemented with LayerNorm only");
  if (mosaic) {
    readMptAttention(f, f, out, true);
    return;
  }
  static const Json empty = Json::object();
  const Json& attn =
      root.contains("attn_config") && !root.at("attn_config").is_null() ? root.at("attn_config") : empty;
  if (!attn.is_object()) {
    f.fail("attn_config", "is " + shown(attn) + "; an object is required");
    return;
  }
  Fields a(attn, out->file, "attn_config.");
  readMptAttention(a, f, out, false);
}

}  // namespace

StatusOr<HfLmConfig> parseHfLmConfig(const std::string& jsonText, const std::string& file) {
  Json root;
  try {
    root = Json::parse(jsonText);
  } catch (const Json::parse_error& e) {
    return Status::corruption(file + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) return Status::corruption(file + ": not a JSON object");
  HfLmConfig out;
  out.file = file;
  Fields f(root, file);
  out.model_type = f.stringOr("model_type", "");
  if (!f.status().isOk()) return f.status();
  if (out.model_type == "opt") {
    out.shape.family = "opt";
    readOpt(f, &out);
  } else if (out.model_type == "gpt_neox") {
    out.shape.family = "gpt_neox";
    readGptNeox(f, root, &out);
  } else if (out.model_type == "llama") {
    out.shape.family = "llama";
    readLlama(f, root, &out);
  } else if (out.model_type == "mpt" || out.model_type == "mosaic_gpt") {
    readMpt(f, root, &out, out.model_type == "mosaic_gpt");
  } else {
    return Status::unsupported(file + ": model_type = " + shown(f.raw("model_type")) +
                               " is not supported (known: opt, gpt_neox, llama, mpt, mosaic_gpt)");
  }
  if (!f.status().isOk()) return f.status();
  const LmConfig& s = out.shape;
  for (const auto& [field, value] : {std::pair<const char*, int64_t>{"vocab_size", s.vocab_size},
                                     {"width", s.width},
                                     {"layers", s.layers},
                                     {"heads", s.heads},
                                     {"ffn_dim", s.ffn_dim},
                                     {"max_positions", s.max_positions}}) {
    if (value <= 0)
      return Status::invalidArgument(file + ": " + out.keys[field] + " = " + std::to_string(value) +
                                     " must be positive");
  }
  if (s.width % s.heads != 0)
    return Status::invalidArgument(file + ": " + out.keys["width"] + " " + std::to_string(s.width) +
                                   " is not divisible by " + out.keys["heads"] + " " +
                                   std::to_string(s.heads));
  return out;
}

StatusOr<HfLmConfig> readHfLmConfig(const std::string& dir) {
  const std::string file = (std::filesystem::path(dir) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return Status::notFound(file + ": no such file");
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::ioError(file + ": cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::ioError(file + ": cannot be read");
  return parseHfLmConfig(text.str(), file);
}

bool hasHfConfigJson(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec) &&
         std::filesystem::exists(std::filesystem::path(path) / "config.json", ec);
}

}  // namespace fs::protocol

#include "backend/state_keys/flamingo_keys.h"

#include <optional>
#include <utility>

namespace fs::state_keys {
namespace {

const std::string kLm = "lang_encoder.";

bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool endsWithComponent(const std::string& s, const std::string& suffix) {
  if (s == suffix) return true;
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         s[s.size() - suffix.size() - 1] == '.';
}

// "3.self_attn.q_proj.weight" -> {"3", "self_attn.q_proj.weight"}
std::optional<std::pair<std::string, std::string>> splitIndex(const std::string& rest) {
  const auto dot = rest.find('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const auto index = rest.substr(0, dot);
  if (index.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::make_pair(index, rest.substr(dot + 1));
}

KeyTarget ignored() {
  return KeyTarget{KeyTarget::Kind::kIgnored, "", false};
}

KeyTarget parameter(std::string name, bool alias = false) {
  return KeyTarget{KeyTarget::Kind::kParameter, std::move(name), alias};
}

// Other spellings of the output head's path: transformers >= 5 names
// GPTNeoXForCausalLM's head `lm_head` (its weight renaming maps the
// `embed_out` of older checkpoints onto it), so a GPT-NeoX model saved by
// transformers 5, or OpenFlamingo run on it, writes lm_head.weight.
std::vector<std::string> outputHeadAliases(const LmKeyLayout& lm) {
  if (lm.outputHeadPath == "embed_out") return {"lm_head"};
  return {};
}

// The head's key, or one of its aliases (after `prefix`): the head's target.
std::optional<KeyTarget> headTarget(const LmKeyLayout& lm, const std::string& prefix,
                                    const std::string& key) {
  const std::string head = prefix + lm.outputHeadPath + ".weight";
  bool alias = false;
  if (key != head) {
    for (const auto& a : outputHeadAliases(lm)) alias = alias || key == prefix + a + ".weight";
    if (!alias) return std::nullopt;
  }
  if (lm.tiedHead) return ignored();
  return parameter(head, alias);
}

}  // namespace

protocol::StatusOr<LmKeyLayout> lmKeyLayout(const std::string& family, bool tied_head) {
  if (family == "opt") return LmKeyLayout{"model.decoder.layers", "lm_head", tied_head, {}};
  if (family == "mpt") return LmKeyLayout{"transformer.blocks", "lm_head", tied_head, {}};
  if (family == "gpt_neox")
    return LmKeyLayout{"gpt_neox.layers",
                       "embed_out",
                       tied_head,
                       {"attention.bias", "attention.masked_bias", "attention.rotary_emb.inv_freq"}};
  if (family == "llama")
    return LmKeyLayout{"model.layers", "lm_head", tied_head, {"self_attn.rotary_emb.inv_freq"}};
  return protocol::Status::invalidArgument("model.lm.family: unknown LM family '" + family +
                                           "' (known: opt, mpt, gpt_neox, llama)");
}

KeyMapper flamingoKeyMapper(const LmKeyLayout& lm) {
  const std::string layers = kLm + lm.decoderLayersPath + ".";
  return [lm, layers](const std::string& source_key) -> std::optional<KeyTarget> {
    std::string key = source_key;
    if (startsWith(key, "module.")) key = key.substr(7);
    if (auto h = headTarget(lm, kLm, key)) return h;
    for (const auto& suffix : lm.recomputedSuffixes) {
      if (startsWith(key, kLm) && endsWithComponent(key, suffix)) return ignored();
    }
    // The reference keeps duplicate references to the same tensors.
    for (const auto& [prefix, slot] :
         {std::pair<std::string, std::string>{kLm + "old_decoder_blocks.", "decoder_layer."},
          {kLm + "gated_cross_attn_layers.", "gated_cross_attn_layer."}}) {
      if (!startsWith(key, prefix)) continue;
      const auto parts = splitIndex(key.substr(prefix.size()));
      if (!parts) return std::nullopt;
      return parameter(layers + parts->first + "." + slot + parts->second, /*alias=*/true);
    }
    return parameter(key);
  };
}

KeyMapper languageModelKeyMapper(const LmKeyLayout& lm) {
  const std::string layers_path = lm.decoderLayersPath + ".";
  return [lm, layers_path](const std::string& key) -> std::optional<KeyTarget> {
    if (auto h = headTarget(lm, "", key)) {
      if (h->kind == KeyTarget::Kind::kParameter) h->name = kLm + h->name;
      return h;
    }
    for (const auto& suffix : lm.recomputedSuffixes) {
      if (endsWithComponent(key, suffix)) return ignored();
    }
    if (startsWith(key, layers_path)) {
      const auto parts = splitIndex(key.substr(layers_path.size()));
      if (!parts) return std::nullopt;
      return parameter(kLm + layers_path + parts->first + ".decoder_layer." + parts->second);
    }
    return parameter(kLm + key);
  };
}

bool inLanguageModelScope(const std::string& our_name) {
  return startsWith(our_name, kLm) && our_name.find(".gated_cross_attn_layer.") == std::string::npos;
}

KeyMapper visionKeyMapper(bool full_clip) {
  return [full_clip](const std::string& key) -> std::optional<KeyTarget> {
    if (!full_clip) return parameter("vision_encoder." + key);
    if (startsWith(key, "visual.")) return parameter("vision_encoder." + key.substr(7));
    return ignored();  // the text tower
  };
}

bool inVisionScope(const std::string& our_name) {
  return startsWith(our_name, "vision_encoder.");
}

}  // namespace fs::state_keys

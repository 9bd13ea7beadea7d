#include "backend/protocol/config/lm_resolver.h"

#include "backend/protocol/config/model_catalog.h"

namespace fs::protocol {

std::vector<LmMismatch> lmMismatches(const LmConfig& lm, const HfLmConfig& hf) {
  std::vector<LmMismatch> out;
  const LmConfig& s = hf.shape;
  const auto key = [&](const char* field) {
    const auto it = hf.keys.find(field);
    return it == hf.keys.end() ? std::string(field) : it->second;
  };
  const auto differs = [&](const char* field, const std::string& ours, const std::string& theirs) {
    out.push_back(
        {std::string("model.lm.") + field, ours + ", but " + hf.file + " has " + key(field) + " " + theirs});
  };
  if (lm.family != s.family) differs("family", "'" + lm.family + "'", "'" + hf.model_type + "'");
  const std::pair<const char*, std::pair<int64_t, int64_t>> dims[] = {
      {"vocab_size", {lm.vocab_size, s.vocab_size}},
      {"width", {lm.width, s.width}},
      {"layers", {lm.layers, s.layers}},
      {"heads", {lm.heads, s.heads}},
      {"ffn_dim", {lm.ffn_dim, s.ffn_dim}},
      {"max_positions", {lm.max_positions, s.max_positions}}};
  for (const auto& [field, v] : dims) {
    if (v.first != v.second) {
      const bool ratio = key(field) == "expansion_ratio" || key(field) == "mlp_ratio";
      differs(field, std::to_string(v.first),
              ratio ? "giving " + std::to_string(v.second) : std::to_string(v.second));
    }
  }
  if (lm.tied_head != s.tied_head)
    differs("tied_head", lm.tied_head ? "true" : "false", s.tied_head ? "true" : "false");
  return out;
}

StatusOr<ResolvedLm> resolveLm(const LmConfig& lm) {
  ResolvedLm out;
  if (hasHfConfigJson(lm.path)) {
    auto hf = readHfLmConfig(lm.path);
    if (!hf) return hf.status();
    const auto mismatches = lmMismatches(lm, *hf);
    if (!mismatches.empty()) {
      std::string msg = mismatches.front().field + " is " + mismatches.front().message;
      if (mismatches.size() > 1)
        msg += " (and " + std::to_string(static_cast<int64_t>(mismatches.size()) - 1) + " more)";
      return Status::invalidArgument(msg + "; model.lm must describe the model in " + lm.path);
    }
    out.shape = hf->shape;
    out.shape.path = lm.path;
    out.shape.tokenizer_path = lm.tokenizer_path;
    out.arch = hf->arch;
    out.source = hf->file;
    return out;
  }
  out.shape = lm;
  if (auto k = findKnownLm(lm.path); k && k->shape.family == lm.family) {
    out.arch = k->arch;
    out.source = "catalog: " + k->id;
  } else {
    out.source = "family defaults";
  }
  return out;
}

}  // namespace fs::protocol

#include "backend/fsdp_plan/wrap_policy.h"

#include <map>

namespace fs::fsdp_plan {
namespace {

using protocol::Status;

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

std::string parentOf(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

const std::set<std::string>& defaultLayerTypes() {
  static const std::set<std::string> types = {"ResidualAttentionBlock", "PerceiverLayer",
                                              "GatedCrossAttentionBlock", "DecoderLayer"};
  return types;
}

std::vector<std::string> openFlamingoUnits(const ParamInventory& inv) {
  std::vector<std::string> out;
  for (const auto& m : inv.modules) {
    // The input embedding, not OPT's learned positions (the reference wraps get_input_embeddings()).
    const bool embedding = m.type == "Embedding" && m.path.find("embed_positions") == std::string::npos;
    if (m.type == "VisionTransformer" || m.type == "PerceiverResampler" ||
        m.type == "GatedCrossAttentionBlock" || m.type == "DecoderLayer" || m.type == "OutputHead" ||
        embedding) {
      out.push_back(m.path);
    }
  }
  return out;
}

// Bottom-up over the module tree: returns the parameters under `path` not yet in a unit.
int64_t sizeBased(const std::string& path, const std::map<std::string, std::vector<std::string>>& children,
                  const std::map<std::string, int64_t>& own,
                  const std::map<std::string, const ModuleInfo*>& info, int64_t min_params,
                  std::vector<std::string>* picked) {
  int64_t total = own.count(path) ? own.at(path) : 0;
  if (auto it = children.find(path); it != children.end()) {
    for (const auto& c : it->second) total += sizeBased(c, children, own, info, min_params, picked);
  }
  const auto* m = info.at(path);
  if (!path.empty() && m->callable && !m->isVirtual && total >= min_params) {
    picked->push_back(path);
    return 0;
  }
  return total;
}

}  // namespace

std::string WrapPolicy::name() const {
  switch (kind) {
    case WrapKind::kOpenFlamingo:
      return "openflamingo";
    case WrapKind::kTransformerLayer:
      return "transformer_layer";
    case WrapKind::kSizeBased:
      return "size_based";
    case WrapKind::kCustom:
      return "custom";
  }
  return "?";
}

const std::vector<std::string>& wrapPolicyNames() {
  static const std::vector<std::string> names = {"openflamingo", "transformer_layer", "size_based", "custom"};
  return names;
}

protocol::StatusOr<WrapPolicy> wrapPolicyFromName(const std::string& name,
                                                  const protocol::ParallelConfig& parallel) {
  WrapPolicy p;
  if (name == "openflamingo") {
    p.kind = WrapKind::kOpenFlamingo;
  } else if (name == "transformer_layer") {
    p.kind = WrapKind::kTransformerLayer;
    p.moduleTypes = defaultLayerTypes();
  } else if (name == "size_based") {
    p.kind = WrapKind::kSizeBased;
    if (parallel.wrap_min_params < 1)
      return Status::invalidArgument("parallel.wrap_min_params: must be >= 1, got " +
                                     std::to_string(parallel.wrap_min_params));
    p.minParams = parallel.wrap_min_params;
  } else if (name == "custom") {
    p.kind = WrapKind::kCustom;
    if (parallel.wrap_patterns.empty())
      return Status::invalidArgument(
          "parallel.wrap_patterns: the custom wrap policy needs at least one module-path pattern, e.g. "
          "'lang_encoder.*.layers.*.decoder_layer'");
    p.patterns = parallel.wrap_patterns;
  } else {
    return Status::invalidArgument("parallel.wrap_policy: unknown wrap policy '" + name +
                                   "' (known: openflamingo, transformer_layer, size_based, custom)");
  }
  return p;
}

bool matchesModulePattern(const std::string& pattern, const std::string& path) {
  const auto want = splitPath(pattern);
  const auto have = splitPath(path);
  if (want.size() != have.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != "*" && want[i] != have[i]) return false;
  }
  return true;
}

protocol::StatusOr<std::vector<std::string>> selectUnitModules(const ParamInventory& inv,
                                                               const WrapPolicy& policy) {
  std::vector<std::string> picked;
  switch (policy.kind) {
    case WrapKind::kOpenFlamingo:
      return openFlamingoUnits(inv);
    case WrapKind::kTransformerLayer:
      for (const auto& m : inv.modules) {
        if (policy.moduleTypes.count(m.type) != 0) picked.push_back(m.path);
      }
      if (picked.empty())
        return Status::invalidArgument(
            "parallel.wrap_policy: transformer_layer found no module of the types it wraps");
      return picked;
    case WrapKind::kSizeBased: {
      std::map<std::string, std::vector<std::string>> children;
      std::map<std::string, int64_t> own;
      std::map<std::string, const ModuleInfo*> info;
      for (const auto& m : inv.modules) {
        info[m.path] = &m;
        if (!m.path.empty()) children[parentOf(m.path)].push_back(m.path);
      }
      for (const auto& p : inv.params) own[p.module] += p.numel;
      sizeBased("", children, own, info, policy.minParams, &picked);
      // Bottom-up order -> module order.
      std::vector<std::string> ordered;
      for (const auto& m : inv.modules) {
        for (const auto& p : picked) {
          if (p == m.path) ordered.push_back(p);
        }
      }
      return ordered;
    }
    case WrapKind::kCustom:
      for (const auto& pattern : policy.patterns) {
        int matched = 0;
        std::string container;
        for (const auto& m : inv.modules) {
          if (m.path.empty() || !matchesModulePattern(pattern, m.path)) continue;
          if (!m.callable) {
            container = m.path;
            continue;
          }
          ++matched;
          bool seen = false;
          for (const auto& p : picked) seen = seen || p == m.path;
          if (!seen) picked.push_back(m.path);
        }
        if (matched == 0 && !container.empty())
          return Status::invalidArgument(
              "parallel.wrap_patterns: pattern '" + pattern + "' matches only '" + container +
              "', a container whose forward is never called; wrap its entries ('" + container + ".*')");
        if (matched == 0)
          return Status::invalidArgument(
              "parallel.wrap_patterns: pattern '" + pattern +
              "' matches no module of this model (module paths look like "
              "'lang_encoder.model.decoder.layers.3.decoder_layer'; '*' matches one "
              "component)");
      }
      return picked;
  }
  return picked;
}

}  // namespace fs::fsdp_plan

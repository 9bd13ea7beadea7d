// Wrap policies: which modules of the model become FSDP units.
//
// NOTE [Wrap policies]: a policy picks module paths; each picked module is a
// unit owning every parameter beneath it that no deeper picked module owns,
// and the root unit ("") owns the rest. Only callable modules (whose forward
// the model calls as one piece, ModuleInfo::callable) can be picked.
//   openflamingo       the reference's manual layout: the vision encoder as
//                      one unit, the Perceiver, each gated cross-attention
//                      block, each decoder layer, the input embedding and
//                      the output head; the root keeps the rest (OPT's
//                      positions, the final norm).
//   transformer_layer  every module whose type is in `moduleTypes` (default:
//                      ResidualAttentionBlock, PerceiverLayer,
//                      GatedCrossAttentionBlock, DecoderLayer) - torch's
//                      transformer_auto_wrap_policy.
//   size_based         bottom-up: a module whose not-yet-wrapped parameters
//                      reach `minParams` becomes a unit (torch's
//                      size_based_auto_wrap_policy; containers and module
//                      lists are skipped as torch skips ModuleList).
//   custom             module-path patterns, '*' matching one path
//                      component ("lang_encoder.*.layers.*.decoder_layer");
//                      every match is a unit. A pattern matching nothing, or
//                      only containers, is an error naming it.
// Tied parameters are resolved afterwards by the layout (layout.h).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "backend/fsdp_plan/param_inventory.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

enum class WrapKind { kOpenFlamingo, kTransformerLayer, kSizeBased, kCustom };

struct WrapPolicy {
  WrapKind kind = WrapKind::kOpenFlamingo;
  std::set<std::string> moduleTypes;  // transformer_layer
  int64_t minParams = 100000000;      // size_based
  std::vector<std::string> patterns;  // custom

  std::string name() const;  // the config spelling, e.g. "size_based"
};

// The config spellings in a stable order.
const std::vector<std::string>& wrapPolicyNames();

// `name` with the knobs from parallel (wrap_min_params, wrap_patterns).
// Unknown name -> InvalidArgument naming parallel.wrap_policy.
protocol::StatusOr<WrapPolicy> wrapPolicyFromName(const std::string& name,
                                                  const protocol::ParallelConfig& parallel);
inline protocol::StatusOr<WrapPolicy> wrapPolicyFromConfig(const protocol::ParallelConfig& parallel) {
  return wrapPolicyFromName(parallel.wrap_policy, parallel);
}

// The picked module paths, in module (pre-)order. Errors name the field.
protocol::StatusOr<std::vector<std::string>> selectUnitModules(const ParamInventory& inventory,
                                                               const WrapPolicy& policy);

// Whether `path` matches a custom pattern ('*' = exactly one component).
bool matchesModulePattern(const std::string& pattern, const std::string& path);

}  // namespace fs::fsdp_plan

// The FSDP unit layout as data: which parameters each unit owns, in which
// order units are gathered, and the storage dtype. The runtime
// (backend/fsdp) wraps the same units; the `layout` telemetry event and
// `flamingo-train plan` show them.
//
// NOTE [Tied parameters in the layout]: a tensor known under several names
// (a tied output head is the input embedding's weight) is stored once, so it
// must belong to exactly one unit whatever the policy picked. The layout
// gives it to the earliest-gathered unit that claims any of its names; a
// unit that claimed only the alias (e.g. the openflamingo policy's output
// head unit of a tied model) owns nothing then and disappears, recorded in
// the owner's `mergedFrom`. The runtime must gather that owner again where
// the alias is used (the head, at the end of forward / start of backward).
//
// NOTE [Gather order]: the root unit (everything no picked module owns) is
// gathered first and stays gathered through forward and backward, as the
// runtime's root does (fsdp/sharded_model.h); the other units follow in the
// order forward first uses them (vision encoder, Perceiver, embeddings,
// then per decoder layer its gated block and the layer).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/fsdp_plan/param_inventory.h"
#include "backend/fsdp_plan/precision_plan.h"
#include "backend/fsdp_plan/wrap_policy.h"
#include "backend/protocol/status.h"

namespace fs::fsdp_plan {

struct Unit {
  std::string path;                     // module path; "" = the root unit
  std::string moduleType;               // e.g. "DecoderLayer"; "Flamingo" for the root
  std::vector<std::string> params;      // parameter names, in named_parameters() order
  std::vector<std::string> aliases;     // tied names resolved into this unit
  std::vector<std::string> mergedFrom;  // units the tie rule folded into this one
  int64_t paramCount = 0;               // elements
  int64_t frozenCount = 0;              // of paramCount, frozen
  int64_t decayedCount = 0;             // of the trainable, those with weight decay (their own flat group)
  // Reference model only: frozen elements that still get gradients (the
  // FSDP1 unfreeze of the decoder layers). Always 0 for ours.
  int64_t unfrozenCount = 0;
  bool trainable = false;         // any parameter trains
  Dtype dtype = Dtype::kFloat32;  // storage dtype of its trainable part (of the frozen part when all frozen)
  int gatherOrder = 0;            // NOTE [Gather order]
  bool inBackward = true;         // false for units that run under no-grad (the vision encoder)

  int64_t trainableCount() const { return paramCount - frozenCount; }
};

struct Layout {
  std::string policy;       // wrap policy name, or "reference_fsdp1"
  std::vector<Unit> units;  // in gather order

  const Unit* unitOfParam(const std::string& name) const;  // nullptr when no unit holds it
  int64_t numel() const;
};

// Our layout under `policy`. Errors from the policy (unknown pattern, ...) pass through.
protocol::StatusOr<Layout> buildLayout(const ParamInventory& inventory, const WrapPolicy& policy,
                                       const PrecisionPlan& precision);

// The reference's FSDP1 layout (spec section 4): the openflamingo units,
// the decoder layers unfrozen so their gradients exist (unfrozenCount), every
// flat parameter in the weight dtype.
protocol::StatusOr<Layout> buildReferenceLayout(const ParamInventory& inventory, const PrecisionPlan& ours);

}  // namespace fs::fsdp_plan

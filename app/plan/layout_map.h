// The unit-layout map's model: one layout's FSDP units with their parameters,
// as the planner gives it (a Plan's estimate) or as a live run reports it (a
// `layout` event); the module tree with the unit boundaries; a squarified
// treemap of parameter bytes; and the differences between our layout and the
// reference's FSDP1 layout.
//
// NOTE [What a live layout event lacks]
// The `layout` event (docs/telemetry.md) names each unit with its element
// counts, dtype and per-rank shard bytes, but not its parameters, module
// type, gathered size or step-walk peak, and the run has no reference
// layout. layoutMapFromLayoutEvent() gives each unit two leaves, its
// trainable and its frozen elements, both at the event's dtype (the frozen
// part's own dtype is not in the event), and lists what is missing in
// LayoutMap::missing so the view can say so.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <QRectF>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "app/plan/plan.h"
#include "backend/protocol/wire/events.h"

namespace fs::app {

struct MapParam {
  QString name;
  std::int64_t numel = 0;
  std::int64_t bytes = 0;  // storage bytes
  bool trainable = false;
};

struct MapUnit {
  QString path;  // "" = the root unit
  QString moduleType;
  QString dtype;
  int gatherOrder = 0;
  bool trainable = false;
  std::int64_t paramCount = 0;
  std::int64_t frozenParams = 0;
  std::int64_t unfrozenParams = 0;       // reference: frozen elements FSDP1 gives gradients
  std::int64_t gatheredBytes = -1;       // -1: unknown
  std::int64_t peakBytes = -1;           // its largest step-walk moment; -1: unknown
  QString peakPhase;                     // forward | backward; "" unknown
  std::vector<std::int64_t> shardBytes;  // per rank
  QStringList aliases;
  QStringList mergedFrom;
  std::vector<MapParam> params;  // the treemap's leaves

  QString label() const;       // the path, "(root)" for the root unit
  std::int64_t bytes() const;  // its parameters' bytes
  bool isFrozen() const { return !trainable; }
};

struct LayoutMap {
  QString engine;    // "ours" | "reference" | "live"
  QString policy;    // wrap policy, "openflamingo" for the reference
  QString strategy;  // "" for a live event
  int world = 0;
  std::vector<MapUnit> units;  // gather order
  QStringList missing;         // what the source does not say (NOTE [What a live layout event lacks])

  QString title() const;  // "ours: full_shard / openflamingo"
  std::int64_t bytes() const;
  std::vector<std::int64_t> rankBytes() const;  // each rank's shard bytes, all units
  int unitIndex(const QString& path) const;     // -1 when absent
  bool empty() const { return units.empty(); }
};

// The map of `plan.estimates[estimate]` with its layout. REQUIRES a valid index.
LayoutMap layoutMapFromPlan(const Plan& plan, int estimate);
// The reference estimate to show beside `estimate`: the reference's with the
// same strategy, else its first; -1 when the plan has no reference.
int referenceEstimateFor(const Plan& plan, int estimate);
// A live run's layout (NOTE [What a live layout event lacks]).
LayoutMap layoutMapFromLayoutEvent(const protocol::LayoutEvent& event);

// ---- the module tree ------------------------------------------------------------------

struct ModuleNode {
  QString name;  // last path component ("" for the model root)
  QString path;
  int unit = -1;   // the unit whose boundary is this module (its path), else -1
  int owner = -1;  // the unit owning the parameters beneath (innermost boundary)
  int param = -1;  // a leaf: index into units[owner].params
  std::int64_t bytes = 0;
  std::vector<ModuleNode> children;  // first-use order of the parameters
};
// From the parameter names (a live map's leaves hang under their unit).
ModuleNode moduleTree(const LayoutMap& map);

// ---- the treemap ----------------------------------------------------------------------

// Squarified treemap (Bruls, Huizing, van Wijk): one rectangle per weight, in
// input order, tiling `bounds` with areas proportional to the weights and
// aspect ratios near 1. Zero or negative weights get an empty rectangle at
// bounds' top-left; all zero: all empty.
std::vector<QRectF> squarify(const std::vector<double>& weights, const QRectF& bounds);

struct TreemapLeaf {
  int unit = -1;
  int param = -1;  // index into units[unit].params
  QRectF rect;
};
struct Treemap {
  std::vector<QRectF> units;  // parallel to LayoutMap::units (area ~ bytes)
  std::vector<TreemapLeaf> leaves;
};
// Units tile `bounds` by bytes; each unit's parameters tile its rectangle
// shrunk by `inset` on every side (the unit boundary shows between them).
Treemap layoutTreemap(const LayoutMap& map, const QRectF& bounds, double inset = 2.0);
// The unit whose rectangle holds `point`, -1 for none.
int unitAt(const Treemap& treemap, const QPointF& point);
int leafAt(const Treemap& treemap, const QPointF& point);

// ---- ours beside the reference --------------------------------------------------------

enum class LayoutDiffKind {
  kOnlyOurs,         // a unit ours has and the reference does not
  kOnlyReference,    // and the other way round
  kDifferentParams,  // the same module, other parameters
  kDifferentBytes,   // the same parameters stored in other dtypes
  kUnfrozen,         // FSDP1 gives frozen decoder weights gradients
  kTiedConflict,     // the reference unit holding a tied head (incompatible with FSDP1)
  kPlanAndRun,       // the plan and a live run's layout event disagree (app/plan/layout_overlay.h)
};
struct LayoutDifference {
  LayoutDiffKind kind = LayoutDiffKind::kOnlyOurs;
  QString path;  // the unit's path
  QString text;  // one line for people
};
// In our gather order, then the reference's own units.
std::vector<LayoutDifference> diffLayouts(const LayoutMap& ours, const LayoutMap& reference);

}  // namespace fs::app

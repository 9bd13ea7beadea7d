#include "app/plan/layout_map.h"

#include <QSet>
#include <algorithm>

namespace fs::app {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

std::int64_t dtypeBytes(const QString& dtype) {
  if (dtype == QLatin1String("float64") || dtype == QLatin1String("int64")) return 8;
  if (dtype == QLatin1String("bfloat16") || dtype == QLatin1String("float16")) return 2;
  if (dtype == QLatin1String("int8") || dtype == QLatin1String("uint8")) return 1;
  return 4;
}

QString countText(std::int64_t n) {
  if (n >= 1000000000) return QStringLiteral("%1 B").arg(double(n) / 1e9, 0, 'f', 2);
  if (n >= 1000000) return QStringLiteral("%1 M").arg(double(n) / 1e6, 0, 'f', 1);
  return QString::number(n);
}

QString bytesText(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::int64_t{1} << 30)) return QStringLiteral("%1 GiB").arg(b / (1 << 30), 0, 'f', 2);
  if (bytes >= (std::int64_t{1} << 20)) return QStringLiteral("%1 MiB").arg(b / (1 << 20), 0, 'f', 1);
  if (bytes >= 1024) return QStringLiteral("%1 KiB").arg(b / 1024, 0, 'f', 1);
  return QStringLiteral("%1 B").arg(bytes);
}

// Two leaves for a unit whose parameters are not known one by one: its trainable and its frozen
// elements, both at the unit's dtype.
std::vector<MapParam> splitLeaves(const MapUnit& unit) {
  std::vector<MapParam> out;
  const std::int64_t size = dtypeBytes(unit.dtype);
  const std::int64_t trainable = unit.paramCount - unit.frozenParams;
  const QString prefix = unit.path.isEmpty() ? QString() : unit.path + QLatin1Char('.');
  if (trainable > 0)
    out.push_back({prefix + QStringLiteral("(trainable)"), trainable, trainable * size, true});
  if (unit.frozenParams > 0)
    out.push_back({prefix + QStringLiteral("(frozen)"), unit.frozenParams, unit.frozenParams * size, false});
  return out;
}

}  // namespace

QString MapUnit::label() const {
  return path.isEmpty() ? QStringLiteral("(root)") : path;
}

std::int64_t MapUnit::bytes() const {
  std::int64_t b = 0;
  for (const auto& p : params) b += p.bytes;
  return b;
}

QString LayoutMap::title() const {
  if (strategy.isEmpty()) return QStringLiteral("%1: %2").arg(engine, policy);
  return QStringLiteral("%1: %2 / %3").arg(engine, strategy, policy);
}

std::int64_t LayoutMap::bytes() const {
  std::int64_t b = 0;
  for (const auto& u : units) b += u.bytes();
  return b;
}

std::vector<std::int64_t> LayoutMap::rankBytes() const {
  std::vector<std::int64_t> out(static_cast<size_t>(std::max(world, 0)), 0);
  for (const auto& u : units) {
    for (size_t r = 0; r < out.size() && r < u.shardBytes.size(); ++r) out[r] += u.shardBytes[r];
  }
  return out;
}

int LayoutMap::unitIndex(const QString& path) const {
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i].path == path) return static_cast<int>(i);
  }
  return -1;
}

LayoutMap layoutMapFromPlan(const Plan& plan, int estimate) {
  const PlanEstimate& e = plan.estimates.at(static_cast<size_t>(estimate));
  LayoutMap map;
  map.engine = e.engine;
  map.policy = e.policy;
  map.strategy = e.strategy;
  map.world = plan.world;
  const PlanLayout* layout = e.layout >= 0 && e.layout < static_cast<int>(plan.layouts.size())
                                 ? &plan.layouts[size_t(e.layout)]
                                 : nullptr;
  if (layout == nullptr) map.missing << QStringLiteral("the layout's units (the plan has no layouts)");
  bool namesOnly = false, noPeak = false;
  for (size_t i = 0; i < e.units.size(); ++i) {
    MapUnit unit;
    const PlanUnitShards& s = e.units[i];
    unit.path = s.path;
    unit.shardBytes = s.shardBytes;
    unit.gatheredBytes = s.gatheredBytes > 0 ? s.gatheredBytes : -1;
    unit.peakBytes = s.peakPhase.isEmpty() ? -1 : s.peakBytes;
    unit.peakPhase = s.peakPhase;
    noPeak = noPeak || s.peakPhase.isEmpty();
    if (layout != nullptr && i < layout->units.size()) {
      const PlanUnit& u = layout->units[i];
      unit.path = u.path;
      unit.moduleType = u.moduleType;
      unit.dtype = u.dtype;
      unit.gatherOrder = u.gatherOrder;
      unit.trainable = u.trainable;
      unit.paramCount = u.paramCount;
      unit.frozenParams = u.frozenParams;
      unit.unfrozenParams = u.unfrozenParams;
      unit.aliases = u.aliases;
      unit.mergedFrom = u.mergedFrom;
      bool sized = true;
      for (const auto& p : u.params) {
        sized = sized && !(p.numel == 0 && p.bytes == 0);
        unit.params.push_back({p.name, p.numel, p.bytes, p.trainable});
      }
      if (!sized && u.paramCount > 0) {
        // A plan before param_details: the unit's trainable and frozen elements, as a live event gives them.
        namesOnly = true;
        unit.params = splitLeaves(unit);
      }
    }
    map.units.push_back(std::move(unit));
  }
  if (namesOnly)
    map.missing << QStringLiteral(
        "parameter sizes (a plan before param_details: each unit drawn as its "
        "trainable and frozen elements)");
  if (noPeak) map.missing << QStringLiteral("the step-walk peaks (a plan written before peak_phase)");
  return map;
}

int referenceEstimateFor(const Plan& plan, int estimate) {
  int first = -1;
  const QString strategy = estimate >= 0 && estimate < static_cast<int>(plan.estimates.size())
                               ? plan.estimates[size_t(estimate)].strategy
                               : QString();
  for (size_t i = 0; i < plan.estimates.size(); ++i) {
    if (plan.estimates[i].engine != QLatin1String("reference")) continue;
    if (plan.estimates[i].strategy == strategy) return static_cast<int>(i);
    if (first < 0) first = static_cast<int>(i);
  }
  return first;
}

LayoutMap layoutMapFromLayoutEvent(const protocol::LayoutEvent& event) {
  LayoutMap map;
  map.engine = QStringLiteral("live");
  map.policy = QStringLiteral("run");
  for (const auto& u : event.units) {
    map.world = std::max(map.world, static_cast<int>(u.shard_bytes.size()));
    MapUnit unit;
    unit.path = qs(u.path);
    unit.dtype = qs(u.dtype);
    unit.gatherOrder = u.gather_order;
    unit.trainable = u.trainable;
    unit.paramCount = u.param_count;
    unit.frozenParams = u.frozen_params;
    unit.shardBytes = u.shard_bytes;
    unit.params = splitLeaves(unit);
    map.units.push_back(std::move(unit));
  }
  std::stable_sort(map.units.begin(), map.units.end(),
                   [](const MapUnit& a, const MapUnit& b) { return a.gatherOrder < b.gatherOrder; });
  map.missing << QStringLiteral("parameter names") << QStringLiteral("module types")
              << QStringLiteral("gathered sizes") << QStringLiteral("step-walk peaks")
              << QStringLiteral("the reference's layout") << QStringLiteral("the frozen part's own dtype");
  return map;
}

ModuleNode moduleTree(const LayoutMap& map) {
  ModuleNode root;
  root.unit = map.unitIndex(QString());
  root.owner = root.unit;
  for (size_t u = 0; u < map.units.size(); ++u) {
    const auto& unit = map.units[u];
    for (size_t p = 0; p < unit.params.size(); ++p) {
      const QStringList parts = unit.params[p].name.split(QLatin1Char('.'));
      ModuleNode* node = &root;
      node->bytes += unit.params[p].bytes;
      QString path;
      for (int k = 0; k < parts.size(); ++k) {
        path = path.isEmpty() ? parts[k] : path + QLatin1Char('.') + parts[k];
        auto it = std::find_if(node->children.begin(), node->children.end(),
                               [&](const ModuleNode& c) { return c.name == parts[k]; });
        if (it == node->children.end()) {
          ModuleNode child;
          child.name = parts[k];
          child.path = path;
          const bool leaf = k + 1 == parts.size();
          child.unit = leaf ? -1 : map.unitIndex(path);
          child.owner = child.unit >= 0 ? child.unit : node->owner;
          node->children.push_back(std::move(child));
          it = node->children.end() - 1;
        }
        node = &*it;
        node->bytes += unit.params[p].bytes;
      }
      // A tied parameter lives where the tie rule put it, not under its name's module.
      node->owner = static_cast<int>(u);
      node->param = static_cast<int>(p);
    }
  }
  return root;
}

std::vector<LayoutDifference> diffLayouts(const LayoutMap& ours, const LayoutMap& reference) {
  std::vector<LayoutDifference> out;
  auto names = [](const MapUnit& u) {
    QSet<QString> s;
    for (const auto& p : u.params) s.insert(p.name);
    return s;
  };
  for (const auto& u : ours.units) {
    const int r = reference.unitIndex(u.path);
    if (r < 0) {
      out.push_back({LayoutDiffKind::kOnlyOurs, u.path,
                     QStringLiteral("%1: a unit here, not in the reference").arg(u.label())});
      continue;
    }
    const MapUnit& ref = reference.units[size_t(r)];
    if (names(u) != names(ref)) {
      out.push_back({LayoutDiffKind::kDifferentParams, u.path,
                     QStringLiteral("%1: %2 parameters here, %3 in the reference")
                         .arg(u.label())
                         .arg(u.params.size())
                         .arg(ref.params.size())});
    } else if (u.bytes() != ref.bytes()) {
      out.push_back({LayoutDiffKind::kDifferentBytes, u.path,
                     QStringLiteral("%1: %2 here (frozen part in its own dtype), %3 in the reference (%4)")
                         .arg(u.label(), bytesText(u.bytes()), bytesText(ref.bytes()), ref.dtype)});
    }
  }
  for (const auto& ref : reference.units) {
    if (ours.unitIndex(ref.path) < 0) {
      out.push_back({LayoutDiffKind::kOnlyReference, ref.path,
                     QStringLiteral("%1: a unit in the reference, not here").arg(ref.label())});
    }
    if (ref.unfrozenParams > 0) {
      out.push_back(
          {LayoutDiffKind::kUnfrozen, ref.path,
           QStringLiteral("%1: FSDP1 gives its %2 frozen elements gradients (requires_grad on every "
                          "decoder layer); here they stay frozen")
               .arg(ref.label(), countText(ref.unfrozenParams))});
    }
    if (!ref.aliases.isEmpty() || !ref.mergedFrom.isEmpty()) {
      QStringList tied = ref.aliases + ref.mergedFrom;
      out.push_back({LayoutDiffKind::kTiedConflict, ref.path,
                     QStringLiteral("%1: holds the tied %2 too; the reference's FSDP is documented as "
                                    "incompatible with tied LM embeddings")
                         .arg(ref.label(), tied.join(QStringLiteral(", ")))});
    }
  }
  return out;
}

}  // namespace fs::app

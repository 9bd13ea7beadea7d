#include "app/plan/layout_overlay.h"

#include <QObject>
#include <QStringList>
#include <algorithm>

namespace fs::app {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QString unitText(const QString& path) {
  return path.isEmpty() ? QStringLiteral("(root)") : path;
}

std::vector<std::int64_t> shardsOf(const protocol::LayoutUnit& u) {
  return u.shard_bytes;
}

}  // namespace

LiveOverlay overlayLiveLayout(const LayoutMap& planned, const protocol::LayoutEvent& live) {
  LiveOverlay out;
  out.map = planned;
  out.map.engine = QStringLiteral("live");
  out.map.missing.clear();
  int liveWorld = 0;
  for (const auto& u : live.units) liveWorld = std::max(liveWorld, static_cast<int>(u.shard_bytes.size()));
  auto disagree = [&](const QString& path, const QString& text) {
    out.disagreements.push_back({LayoutDiffKind::kPlanAndRun, path, text});
  };
  if (liveWorld != planned.world) {
    disagree(QString(), QObject::tr("the plan is for %1 rank(s); the run's layout event has %2")
                            .arg(planned.world)
                            .arg(liveWorld));
  }
  out.map.world = liveWorld;

  std::vector<bool> matched(live.units.size(), false);
  for (auto& unit : out.map.units) {
    const auto it = std::find_if(live.units.begin(), live.units.end(),
                                 [&](const protocol::LayoutUnit& l) { return qs(l.path) == unit.path; });
    if (it == live.units.end()) {
      disagree(unit.path,
               QObject::tr("%1: planned as a unit; the run has no such unit").arg(unitText(unit.path)));
      unit.shardBytes.assign(std::size_t(liveWorld), 0);
      continue;
    }
    matched[std::size_t(it - live.units.begin())] = true;
    QStringList differs;
    if (it->param_count != unit.paramCount || it->frozen_params != unit.frozenParams) {
      differs << QObject::tr("%1 elements (%2 frozen) planned, %3 (%4 frozen) in the run")
                     .arg(unit.paramCount)
                     .arg(unit.frozenParams)
                     .arg(it->param_count)
                     .arg(it->frozen_params);
    }
    if (qs(it->dtype) != unit.dtype)
      differs << QObject::tr("stored as %1 planned, %2 in the run").arg(unit.dtype, qs(it->dtype));
    if (it->gather_order != unit.gatherOrder)
      differs << QObject::tr("gather order %1 planned, %2 in the run")
                     .arg(unit.gatherOrder)
                     .arg(it->gather_order);
    if (it->trainable != unit.trainable)
      differs << (it->trainable ? QObject::tr("frozen planned, trains in the run")
                                : QObject::tr("trains planned, frozen in the run"));
    if (liveWorld == planned.world && shardsOf(*it) != unit.shardBytes) {
      QStringList ranks;
      for (std::size_t r = 0; r < it->shard_bytes.size(); ++r) {
        const std::int64_t plannedBytes = r < unit.shardBytes.size() ? unit.shardBytes[r] : -1;
        if (plannedBytes != it->shard_bytes[r])
          ranks << QObject::tr("rank %1 holds %2 bytes, planned %3")
                       .arg(r)
                       .arg(it->shard_bytes[r])
                       .arg(plannedBytes);
      }
      differs << ranks.join(QStringLiteral(", "));
    }
    if (!differs.isEmpty())
      disagree(unit.path, unitText(unit.path) + QStringLiteral(": ") + differs.join(QStringLiteral("; ")));
    unit.shardBytes = it->shard_bytes;
  }
  // Units only the run has, after the planned ones, with the event's two leaves.
  protocol::LayoutEvent extra;
  for (std::size_t i = 0; i < live.units.size(); ++i)
    if (!matched[i]) extra.units.push_back(live.units[i]);
  if (!extra.units.empty()) {
    const LayoutMap only = layoutMapFromLayoutEvent(extra);
    for (const auto& unit : only.units) {
      disagree(unit.path, QObject::tr("%1: a unit of the run (gather order %2) that the plan does not have")
                              .arg(unitText(unit.path))
                              .arg(unit.gatherOrder));
      out.map.units.push_back(unit);
    }
  }
  std::stable_sort(out.disagreements.begin(), out.disagreements.end(),
                   [&](const LayoutDifference& a, const LayoutDifference& b) {
                     return out.map.unitIndex(a.path) < out.map.unitIndex(b.path);
                   });
  return out;
}

}  // namespace fs::app

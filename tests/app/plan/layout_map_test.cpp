// The layout map's model (app/plan/layout_map.h): the squarified treemap's
// geometry (areas proportional to bytes, no overlaps, inside the bounds), the
// module tree's unit boundaries, a live layout event's map, and ours against
// the reference on the real planner's plan of the tiny preset (its FSDP1
// unfreezes the decoder layers; its tied head conflicts), and a live event
// laid over that plan (app/plan/layout_overlay.h).
#include "app/plan/layout_map.h"

#include <QProcess>
#include <QTest>
#include <functional>
#include <random>

#include "app/plan/layout_overlay.h"
#include "app/plan/plan_json.h"

using namespace fs::app;

namespace {

constexpr double kEps = 1e-6;

bool inside(const QRectF& r, const QRectF& bounds) {
  return r.left() >= bounds.left() - kEps && r.top() >= bounds.top() - kEps &&
         r.right() <= bounds.right() + kEps && r.bottom() <= bounds.bottom() + kEps;
}

double overlap(const QRectF& a, const QRectF& b) {
  const QRectF i = a.intersected(b);
  return i.isEmpty() ? 0.0 : i.width() * i.height();
}

// Areas proportional to the weights, pairwise disjoint, inside, tiling the bounds.
void checkTiling(const std::vector<double>& w, const std::vector<QRectF>& rects, const QRectF& bounds) {
  QCOMPARE(rects.size(), w.size());
  double total = 0;
  for (double x : w) total += std::max(0.0, x);
  const double area = bounds.width() * bounds.height();
  double covered = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    QVERIFY2(inside(rects[i], bounds), qPrintable(QStringLiteral("rect %1 outside").arg(i)));
    const double a = rects[i].width() * rects[i].height();
    const double want = w[i] > 0 ? w[i] / total * area : 0.0;
    QVERIFY2(std::abs(a - want) <= 1e-6 * area,
             qPrintable(QStringLiteral("rect %1: area %2, want %3").arg(i).arg(a).arg(want)));
    covered += a;
    for (size_t j = i + 1; j < w.size(); ++j) QVERIFY(overlap(rects[i], rects[j]) <= 1e-9 * area);
  }
  QVERIFY(std::abs(covered - area) <= 1e-6 * area);
}

// The real planner's plan of the tiny preset on two ranks, all policies and strategies.
Plan planTiny() {
  QProcess p;
  p.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
          {QStringLiteral("plan"), QStringLiteral("--config"),
           QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml"), QStringLiteral("--json"),
           QStringLiteral("--world"), QStringLiteral("2")});
  if (!p.waitForFinished(120000) || p.exitCode() != 0)
    qFatal("flamingo-train plan failed: %s", p.readAllStandardError().constData());
  const PlanParse parse = parsePlanJson(p.readAllStandardOutput());
  if (!parse.ok()) qFatal("%s", qPrintable(parse.error));
  return parse.plan;
}

// The plan is run once and shared: each run of the planner is seconds on a busy machine.
const Plan& tinyPlan() {
  static const Plan plan = planTiny();
  return plan;
}

int estimateOf(const Plan& plan, const QString& engine, const QString& policy) {
  for (size_t i = 0; i < plan.estimates.size(); ++i) {
    const auto& e = plan.estimates[i];
    if (e.engine == engine && e.policy == policy && e.strategy == QLatin1String("full_shard")) return int(i);
  }
  return -1;
}

}  // namespace

class LayoutMapTest : public QObject {
  Q_OBJECT
 private slots:
  void squarifyTilesWithProportionalAreas() {
    const QRectF bounds(10, 20, 640, 400);
    checkTiling({6, 6, 4, 3, 2, 2, 1}, squarify({6, 6, 4, 3, 2, 2, 1}, bounds), bounds);
    checkTiling({1}, squarify({1}, bounds), bounds);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> d(0.001, 1000.0);
    for (int round = 0; round < 20; ++round) {
      std::vector<double> w(1 + rng() % 300);
      for (auto& x : w) x = d(rng);
      const QRectF b(0, 0, 50 + rng() % 1000, 50 + rng() % 600);
      checkTiling(w, squarify(w, b), b);
    }
  }

  void squarifyGivesZeroWeightsNoArea() {
    const QRectF bounds(0, 0, 100, 100);
    const auto rects = squarify({0, 5, -1, 5}, bounds);
    QVERIFY(rects[0].isEmpty());
    QVERIFY(rects[2].isEmpty());
    QCOMPARE(rects[1].width() * rects[1].height(), 5000.0);
    for (const auto& r : squarify({0, 0}, bounds)) QVERIFY(r.isEmpty());
  }

  void squarifyKeepsRectanglesNearSquare() {
    const auto rects = squarify(std::vector<double>(16, 1.0), QRectF(0, 0, 400, 400));
    for (const auto& r : rects) QVERIFY(std::max(r.width() / r.height(), r.height() / r.width()) < 2.01);
  }

  void treemapUnitsByBytesLeavesInsideTheirUnit() {
    const Plan plan = tinyPlan();
    const LayoutMap map = layoutMapFromPlan(plan, estimateOf(plan, "ours", "openflamingo"));
    QVERIFY(map.missing.isEmpty());
    const QRectF bounds(0, 0, 800, 500);
    const Treemap t = layoutTreemap(map, bounds, 2.0);
    std::vector<double> unitBytes;
    size_t params = 0;
    for (const auto& u : map.units) {
      unitBytes.push_back(double(u.bytes()));
      params += u.params.size();
    }
    checkTiling(unitBytes, t.units, bounds);
    QCOMPARE(t.leaves.size(), params);  // every tiny parameter has bytes
    // Inside a unit, the leaves tile its inset rectangle by the parameters' bytes.
    for (size_t u = 0; u < map.units.size(); ++u) {
      const QRectF inner = t.units[u].adjusted(2, 2, -2, -2);
      double area = 0;
      for (const auto& leaf : t.leaves) {
        if (leaf.unit != int(u)) continue;
        const double a = leaf.rect.width() * leaf.rect.height();
        const double want = double(map.units[u].params[size_t(leaf.param)].bytes) /
                            double(map.units[u].bytes()) * inner.width() * inner.height();
        QVERIFY(std::abs(a - want) <= 1e-6 * inner.width() * inner.height());
        area += a;
      }
      QVERIFY(std::abs(area - inner.width() * inner.height()) <= 1e-6 * inner.width() * inner.height());
    }
    for (size_t i = 0; i < t.leaves.size(); ++i) {
      const auto& leaf = t.leaves[i];
      QVERIFY(inside(leaf.rect, t.units[size_t(leaf.unit)]));
      for (size_t j = i + 1; j < t.leaves.size(); ++j) QVERIFY(overlap(leaf.rect, t.leaves[j].rect) < 1e-6);
      QCOMPARE(leafAt(t, leaf.rect.center()), int(i));
      QCOMPARE(unitAt(t, leaf.rect.center()), leaf.unit);
    }
  }

  void planMapCarriesParametersShardsAndPeaks() {
    const Plan plan = tinyPlan();
    const LayoutMap map = layoutMapFromPlan(plan, estimateOf(plan, "ours", "openflamingo"));
    QCOMPARE(map.world, 2);
    QCOMPARE(map.bytes(), plan.params * 4);  // float32 throughout
    std::int64_t ranks = 0;
    for (auto b : map.rankBytes()) ranks += b;
    QVERIFY(ranks >= map.bytes());  // padding
    for (const auto& u : map.units) {
      std::int64_t frozen = 0;
      for (const auto& p : u.params) frozen += p.trainable ? 0 : p.numel;
      QCOMPARE(frozen, u.frozenParams);
      QVERIFY(u.gatheredBytes > 0);
      QVERIFY(!u.peakPhase.isEmpty());
      QCOMPARE(int(u.shardBytes.size()), 2);
    }
  }

  void moduleTreeMarksUnitBoundaries() {
    const Plan plan = tinyPlan();
    const LayoutMap map = layoutMapFromPlan(plan, estimateOf(plan, "ours", "openflamingo"));
    const ModuleNode root = moduleTree(map);
    QCOMPARE(root.bytes, map.bytes());
    QCOMPARE(root.unit, map.unitIndex(QString()));
    // Every unit but the root is a module of the tree, marked as a boundary.
    int boundaries = 0, leaves = 0;
    std::function<void(const ModuleNode&)> walk = [&](const ModuleNode& n) {
      if (n.unit >= 0 && !n.path.isEmpty()) {
        ++boundaries;
        QCOMPARE(map.units[size_t(n.unit)].path, n.path);
      }
      if (n.param >= 0) {
        ++leaves;
        QCOMPARE(map.units[size_t(n.owner)].params[size_t(n.param)].name, n.path);
      }
      for (const auto& c : n.children) walk(c);
    };
    walk(root);
    int named = 0;
    for (const auto& u : map.units) named += u.path.isEmpty() ? 0 : 1;
    QCOMPARE(boundaries, named);
    size_t params = 0;
    for (const auto& u : map.units) params += u.params.size();
    QCOMPARE(size_t(leaves), params);
  }

  void referenceDiffMarksUnfrozenLayersAndTheTiedHead() {
    const Plan plan = tinyPlan();
    const int ours = estimateOf(plan, "ours", "openflamingo");
    const int ref = referenceEstimateFor(plan, ours);
    QVERIFY(ref >= 0);
    QCOMPARE(plan.estimates[size_t(ref)].strategy, QStringLiteral("full_shard"));
    const auto diff = diffLayouts(layoutMapFromPlan(plan, ours), layoutMapFromPlan(plan, ref));
    int unfrozen = 0, tied = 0, structural = 0;
    for (const auto& d : diff) {
      if (d.kind == LayoutDiffKind::kUnfrozen) {
        ++unfrozen;
        QVERIFY2(d.path.contains(QStringLiteral("layers")), qPrintable(d.path));
      }
      if (d.kind == LayoutDiffKind::kTiedConflict) {
        ++tied;
        QVERIFY2(d.text.contains(QStringLiteral("lm_head")), qPrintable(d.text));
      }
      if (d.kind == LayoutDiffKind::kOnlyOurs || d.kind == LayoutDiffKind::kOnlyReference ||
          d.kind == LayoutDiffKind::kDifferentParams)
        ++structural;
    }
    QCOMPARE(unfrozen, 2);  // tiny: two decoder layers
    QCOMPARE(tied, 1);
    QCOMPARE(structural, 0);  // the same openflamingo units
    // Another policy: units differ.
    const int tl = estimateOf(plan, "ours", "transformer_layer");
    QVERIFY(tl >= 0);
    bool differs = false;
    for (const auto& d : diffLayouts(layoutMapFromPlan(plan, tl), layoutMapFromPlan(plan, ref)))
      differs = differs || d.kind == LayoutDiffKind::kOnlyOurs || d.kind == LayoutDiffKind::kOnlyReference;
    QVERIFY(differs);
  }

  void planWithoutDetailsDrawsEachUnitAsItsTrainableAndFrozenParts() {
    // A plan written before param_details / peak_phase: names only.
    const QByteArray json = R"({"schema": "fs.plan/1", "world": 1, "nodes": 1,
      "model": {"family": "opt", "params": 30, "trainable_params": 10},
      "layouts": [{"policy": "openflamingo", "units": [
        {"path": "", "param_count": 30, "frozen_params": 20, "dtype": "float32", "params": ["a.w", "b.w"]}]}],
      "estimates": [{"engine": "ours", "policy": "openflamingo", "strategy": "no_shard", "layout": 0,
        "shard_group_size": 1, "per_rank": {"parameters": 120, "gradients": 40, "optimizer": 80,
        "model_state": 240, "gathered_peak": 0, "activations": 9, "activations_without_checkpointing": 9,
        "activations_with_checkpointing": 3, "peak": 249},
        "units": [{"shard_bytes": [120], "padding_elems": 0}]}]})";
    const PlanParse parse = parsePlanJson(json);
    QVERIFY2(parse.ok(), qPrintable(parse.error));
    const LayoutMap map = layoutMapFromPlan(parse.plan, 0);
    QCOMPARE(map.units.size(), size_t(1));
    QCOMPARE(map.units[0].params.size(), size_t(2));
    QCOMPARE(map.units[0].params[0].bytes, 40);
    QVERIFY(!map.units[0].params[1].trainable);
    QCOMPARE(map.bytes(), 120);
    QCOMPARE(map.units[0].gatheredBytes, -1);
    QCOMPARE(map.units[0].peakBytes, -1);
    QCOMPARE(map.missing.size(), 2);
  }

  void liveEventMapSaysWhatIsMissing() {
    fs::protocol::LayoutEvent event;
    fs::protocol::LayoutUnit root{"", 100, "float32", true, 40, {200, 200}, 0, 0};
    fs::protocol::LayoutUnit tower{"vision_encoder", 1000, "bfloat16", false, 1000, {1000, 1000}, 0, 1};
    event.units = {tower, root};
    const LayoutMap map = layoutMapFromLayoutEvent(event);
    QCOMPARE(map.world, 2);
    QCOMPARE(map.units[0].path, QString());  // gather order
    QCOMPARE(map.units[0].params.size(), size_t(2));
    QCOMPARE(map.units[0].params[0].bytes, 60 * 4);
    QCOMPARE(map.units[1].params.size(), size_t(1));
    QCOMPARE(map.units[1].params[0].bytes, 1000 * 2);
    QVERIFY(!map.units[1].params[0].trainable);
    QCOMPARE(map.rankBytes(), (std::vector<std::int64_t>{1200, 1200}));
    QVERIFY(map.missing.contains(QStringLiteral("parameter names")));
    QCOMPARE(map.units[0].peakBytes, -1);
  }

  // A live event that is the plan's own layout overlays without a disagreement and keeps the
  // plan's names, types and gathered sizes; every way the run differs is listed, none dropped.
  void liveOverlayKeepsThePlanAndListsEveryDisagreement() {
    const Plan plan = tinyPlan();
    const LayoutMap planned = layoutMapFromPlan(plan, estimateOf(plan, "ours", "openflamingo"));
    QVERIFY(planned.units.size() > 2);
    fs::protocol::LayoutEvent same;
    for (const auto& u : planned.units) {
      same.units.push_back({u.path.toStdString(), u.paramCount, u.dtype.toStdString(), u.trainable,
                            u.frozenParams, u.shardBytes, 0, u.gatherOrder});
    }
    const LiveOverlay agree = overlayLiveLayout(planned, same);
    QVERIFY(agree.disagreements.empty());
    QCOMPARE(agree.map.engine, QStringLiteral("live"));
    QCOMPARE(agree.map.units.size(), planned.units.size());
    for (size_t u = 0; u < planned.units.size(); ++u) {
      QCOMPARE(agree.map.units[u].params.size(), planned.units[u].params.size());
      QCOMPARE(agree.map.units[u].gatheredBytes, planned.units[u].gatheredBytes);
      QCOMPARE(agree.map.units[u].moduleType, planned.units[u].moduleType);
    }

    // The run: the second unit missing, the third's counts and rank 1's bytes off, one unit extra.
    fs::protocol::LayoutEvent other = same;
    const QString missing = planned.units[1].path;
    const QString changed = planned.units[2].path;
    other.units.erase(other.units.begin() + 1);
    other.units[1].param_count += 1;
    other.units[1].shard_bytes[1] += 4;
    other.units.push_back({"extra.module", 10, "float32", true, 0, {20, 20}, 0, 99});
    const LiveOverlay differ = overlayLiveLayout(planned, other);
    QCOMPARE(differ.map.units.size(), planned.units.size() + 1);
    QCOMPARE(differ.map.units.back().path, QStringLiteral("extra.module"));
    QCOMPARE(differ.map.units[2].shardBytes, other.units[1].shard_bytes);  // the run's bytes shown
    QCOMPARE(differ.disagreements.size(), size_t(3));
    QStringList paths;
    for (const auto& d : differ.disagreements) {
      QCOMPARE(d.kind, LayoutDiffKind::kPlanAndRun);
      paths << d.path;
    }
    QCOMPARE(paths, (QStringList{missing, changed, QStringLiteral("extra.module")}));
    QVERIFY(differ.disagreements[1].text.contains(QStringLiteral("elements")));
    QVERIFY(differ.disagreements[1].text.contains(QStringLiteral("rank 1 holds")));

    // Another world: said once, for the whole layout.
    fs::protocol::LayoutEvent one = same;
    for (auto& u : one.units) u.shard_bytes.resize(1);
    const LiveOverlay world = overlayLiveLayout(planned, one);
    QCOMPARE(world.disagreements.size(), size_t(1));
    QVERIFY(world.disagreements[0].text.contains(QStringLiteral("2 rank")));
    QCOMPARE(world.map.world, 1);
  }
};

QTEST_GUILESS_MAIN(LayoutMapTest)
#include "layout_map_test.moc"

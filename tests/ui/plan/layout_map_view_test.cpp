// LayoutMapView on the real flamingo-train's plans: a click at a unit's
// rectangle centre selects that unit (on both sides) and lists its
// parameters, gathered size and step-walk peak; the PNG export is a valid
// image and the SVG parses as XML with one <rect> per leaf; a live layout
// event alone shows ours and says what it lacks; the monitor lays a real 2-rank
// run's event over the plan of its config.yaml, and disagreements between the
// plan and the run are listed; the planner's "Layout map" tab follows the
// selected row. The 9B preset's map is saved for the docs
// (<build>/tests/screenshots/layout-map-9b.png -> docs/images/).
#include "ui/plan/layout_map_view.h"

#include <QFile>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <QXmlStreamReader>

#include "app/control/control_client.h"
#include "app/monitor/run_monitor.h"
#include "app/plan/plan_json.h"
#include "app/plan/plan_runner.h"
#include "plan_test_util.h"
#include "ui/fsdp_layout/layout_table.h"
#include "ui/monitor/monitor_page.h"
#include "ui/plan/estimate_view.h"
#include "ui/plan/layout_treemap_widget.h"
#include "ui/plan/plan_table_model.h"
#include "ui/plan/planner_view.h"
#include "ui_plan_test_util.h"

using namespace fs;
using namespace fs::ui;

namespace {

// The real planner's plan of `preset` (resources/presets/<preset>.yaml).
app::Plan cliPlan(const QString& preset, const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
          QStringList{QStringLiteral("plan"), QStringLiteral("--config"),
                      QStringLiteral(FS_SOURCE_DIR "/resources/presets/") + preset + QStringLiteral(".yaml"),
                      QStringLiteral("--json")} +
              args);
  if (!p.waitForFinished(120000) || p.exitCode() != 0)
    qFatal("flamingo-train plan failed: %s", p.readAllStandardError().constData());
  const app::PlanParse parse = app::parsePlanJson(p.readAllStandardOutput());
  if (!parse.ok()) qFatal("%s", qPrintable(parse.error));
  return parse.plan;
}

int estimateOf(const app::Plan& plan, const QString& engine, const QString& policy, const QString& strategy) {
  for (size_t i = 0; i < plan.estimates.size(); ++i) {
    const auto& e = plan.estimates[i];
    if (e.engine == engine && e.policy == policy && e.strategy == strategy) return int(i);
  }
  return -1;
}

QString waitFor(QFuture<QString> future) {
  future.waitForFinished();
  return future.result();
}

int leavesOf(const app::LayoutMap& map) {
  int n = 0;
  for (const auto& u : map.units)
    for (const auto& p : u.params) n += p.bytes > 0 ? 1 : 0;
  return n;
}

}  // namespace

class LayoutMapViewTest : public QObject {
  Q_OBJECT
 private slots:
  void clickAtAUnitsCentreSelectsIt() {
    const app::Plan plan = cliPlan(QStringLiteral("tiny"), {"--world", "2"});
    LayoutMapView view;
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setPlan(plan, estimateOf(plan, "ours", "openflamingo", "full_shard"));
    QVERIFY(view.referenceMap()->isVisible());
    const app::LayoutMap& ours = view.oursMap()->map();
    const app::Treemap t = view.oursMap()->treemap();
    int clicked = 0;
    for (size_t u = 0; u < ours.units.size(); ++u) {
      const QRectF r = t.units[u];
      if (r.width() < 4 || r.height() < 4) continue;
      QTest::mouseClick(view.oursMap(), Qt::LeftButton, {}, r.center().toPoint());
      QVERIFY(view.selectedPath().has_value());
      QCOMPARE(*view.selectedPath(), ours.units[u].path);
      QCOMPARE(view.paramList()->topLevelItemCount(), int(ours.units[u].params.size()));
      QVERIFY2(view.unitDetails()->text().contains(QStringLiteral("gathered: ")),
               qPrintable(view.unitDetails()->text()));
      QVERIFY(view.unitDetails()->text().contains(QStringLiteral("(step walk)")));
      ++clicked;
    }
    QCOMPARE(clicked, int(ours.units.size()));

    // The reference's decoder layer: FSDP1 gives its frozen weights gradients.
    const app::LayoutMap& ref = view.referenceMap()->map();
    const app::Treemap rt = view.referenceMap()->treemap();
    int layer = -1;
    for (size_t u = 0; u < ref.units.size(); ++u)
      if (ref.units[u].unfrozenParams > 0) layer = int(u);
    QVERIFY(layer >= 0);
    QTest::mouseClick(view.referenceMap(), Qt::LeftButton, {}, rt.units[size_t(layer)].center().toPoint());
    QCOMPARE(*view.selectedPath(), ref.units[size_t(layer)].path);
    QVERIFY2(view.unitDetails()->text().contains(QStringLiteral("gradients")),
             qPrintable(view.unitDetails()->text()));
    QVERIFY(view.differences()->count() >= 3);  // two decoder layers and the tied head
    QCOMPARE(view.rankTable()->rowCount(), 2);
    QCOMPARE(view.rankTable()->columnCount(), 3);
  }

  void exportsAPngAndAnSvgWithOneRectPerLeaf() {
    const app::Plan plan = cliPlan(QStringLiteral("tiny"), {"--world", "2"});
    LayoutMapView view;
    view.setPlan(plan, estimateOf(plan, "ours", "transformer_layer", "full_shard"));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString png = dir.filePath(QStringLiteral("map.png"));
    QCOMPARE(waitFor(view.exportImage(png)), QString());
    QImage image;
    QVERIFY(image.load(png, "PNG"));
    QVERIFY(image.width() > 100 && image.height() > 100);

    const QString svg = dir.filePath(QStringLiteral("map.svg"));
    QCOMPARE(waitFor(view.exportImage(svg)), QString());
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&f);
    // Rectangles drawn, not those of the hatch's <pattern> in <defs>.
    int rects = 0, texts = 0, inDefs = 0;
    while (!xml.atEnd()) {
      const auto token = xml.readNext();
      if (token == QXmlStreamReader::StartElement) {
        inDefs += xml.name() == QLatin1String("defs") ? 1 : 0;
        rects += xml.name() == QLatin1String("rect") && inDefs == 0 ? 1 : 0;
        texts += xml.name() == QLatin1String("text") ? 1 : 0;
      } else if (token == QXmlStreamReader::EndElement && xml.name() == QLatin1String("defs")) {
        --inDefs;
      }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QCOMPARE(rects, leavesOf(view.oursMap()->map()) + leavesOf(view.referenceMap()->map()));
    QVERIFY(texts > 0);
    // A bad path is an error naming the file, not a crash.
    const QString bad = dir.filePath(QStringLiteral("missing/dir/map.svg"));
    QVERIFY(waitFor(view.exportImage(bad)).contains(QStringLiteral("missing/dir")));
  }

  void liveLayoutShowsOursAloneAndWhatItLacks() {
    protocol::LayoutEvent event;
    event.units = {{"", 100, "float32", true, 40, {200, 200}, 0, 0},
                   {"vision_encoder", 1000, "bfloat16", false, 1000, {1000, 1000}, 0, 1}};
    LayoutMapView view;
    view.resize(900, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setLiveLayout(event);
    QVERIFY(!view.referenceMap()->isVisible());
    QVERIFY(view.header()->text().contains(QStringLiteral("parameter names")));
    QCOMPARE(view.rankTable()->rowCount(), 2);
    const app::Treemap t = view.oursMap()->treemap();
    QTest::mouseClick(view.oursMap(), Qt::LeftButton, {}, t.units[1].center().toPoint());
    QCOMPARE(*view.selectedPath(), QStringLiteral("vision_encoder"));
    QVERIFY(view.unitDetails()->text().contains(QStringLiteral("not known here")));
  }

  void plannerTabFollowsTheSelectedRow() {
    PlannerView planner(app::test::testEngine());
    planner.show();
    QSignalSpy planned(planner.runner(), &app::PlanRunner::planned);
    auto config = app::test::tinyPreset();
    config.launch.nnodes = 1;
    config.launch.nproc_per_node = 2;
    planner.setConfig(config);
    planner.replan();
    QVERIFY(planned.wait(60000));
    QCOMPARE(planner.tabs()->tabText(1), QStringLiteral("Layout map"));
    QVERIFY(!planner.layoutMap()->oursMap()->map().empty());
    QCOMPARE(planner.layoutMap()->oursMap()->map().world, 2);
    const app::Plan& plan = planner.model()->plan();
    for (int row = 0; row < int(plan.estimates.size()); ++row) {
      planner.table()->selectRow(row);
      if (plan.estimates[size_t(row)].engine != QLatin1String("ours")) continue;
      QCOMPARE(planner.layoutMap()->oursMap()->map().title(), app::layoutMapFromPlan(plan, row).title());
    }
  }

  // A real run directory of the built-in default (`flamingo-train demo --long`, cut to 4 steps:
  // 2 ranks under FSDP full_shard): the monitor's Layout map is the run's layout event laid over
  // the plan of its config.yaml, with parameter names, module tree, gathered sizes and the
  // reference side, and the plan and the run agree unit for unit.
  void monitorLaysTheLiveLayoutOverThePlanOfItsConfig() {
    QTemporaryDir work;
    const QString runDir = work.filePath(QStringLiteral("run"));
    QProcess train;
    train.setWorkingDirectory(work.path());
    train.setProcessChannelMode(QProcess::MergedChannels);
    train.start(QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
                {"demo", "--long", "--run-dir", runDir, "--set", "optim.epochs=1", "--set",
                 "data.datasets[0].samples_per_epoch=16", "--set", "data.datasets[1].samples_per_epoch=8",
                 "--set", "checkpoint.every_steps=0"});
    QVERIFY(train.waitForFinished(300000));
    QVERIFY2(train.exitCode() == 0, train.readAll().constData());

    app::RunMonitor monitor;
    app::ControlClient control;
    MonitorPage page(&monitor, &control);
    QCOMPARE(page.tabs()->indexOf(page.layoutMap()), page.tabs()->indexOf(page.layoutTable()) + 1);
    page.estimateView()->setEngineSearch(app::test::testEngine());
    QSignalSpy layout(&monitor, &app::RunMonitor::layoutChanged);
    QSignalSpy planned(page.estimateView(), &EstimateView::planned);
    monitor.attach(runDir);
    page.runAttached(runDir);
    QVERIFY(layout.count() > 0 || layout.wait(60000));
    QVERIFY(planned.count() > 0 || planned.wait(120000));
    const protocol::LayoutEvent& event = *monitor.layout();
    const app::LayoutMap& live = page.layoutMap()->oursMap()->map();
    QCOMPARE(live.engine, QStringLiteral("live"));
    QCOMPARE(live.strategy, QStringLiteral("full_shard"));
    QCOMPARE(live.world, 2);
    QVERIFY(live.units.size() > 2);
    QCOMPARE(live.units.size(), event.units.size());
    for (size_t u = 0; u < live.units.size(); ++u) {
      QCOMPARE(live.units[u].path.toStdString(), event.units[u].path);
      QCOMPARE(live.units[u].shardBytes, event.units[u].shard_bytes);  // the ranks' own bytes
      QVERIFY(live.units[u].gatheredBytes > 0);                        // from the plan
      for (const auto& p : live.units[u].params) QVERIFY2(!p.name.contains('('), qPrintable(p.name));
    }
    QVERIFY2(page.layoutMap()->header()->text().contains(QStringLiteral("agree unit for unit")),
             qPrintable(page.layoutMap()->header()->text()));
    // Visible within the map (its tab need not be the current one).
    QVERIFY2(page.layoutMap()->referenceMap()->isVisibleTo(page.layoutMap()),
             qPrintable(page.layoutMap()->header()->text()));
    QVERIFY(!page.layoutMap()->referenceMap()->map().empty());
    QVERIFY(page.layoutMap()->moduleTree()->topLevelItemCount() == 1);
    QCOMPARE(page.layoutMap()->rankTable()->rowCount(), 2);
    page.layoutMap()->selectUnit(live.units.back().path);
    QVERIFY(page.layoutMap()->unitDetails()->text().contains(QStringLiteral("gathered: ")));
  }

  // The plan and the run disagree: the disagreements are outlined and listed first, not hidden.
  void liveDisagreementsWithThePlanAreListed() {
    const app::Plan plan =
        cliPlan(QStringLiteral("demo-long"), {"--strategies", "full_shard", "--policies", "openflamingo"});
    const int ours = estimateOf(plan, "ours", "openflamingo", "full_shard");
    QVERIFY(ours >= 0);
    const app::LayoutMap planned = app::layoutMapFromPlan(plan, ours);
    QVERIFY(planned.units.size() > 2);
    protocol::LayoutEvent event;
    for (const auto& u : planned.units) {
      event.units.push_back({u.path.toStdString(), u.paramCount, u.dtype.toStdString(), u.trainable,
                             u.frozenParams, u.shardBytes, 0, u.gatherOrder});
    }
    const QString dropped = planned.units[1].path;
    event.units.erase(event.units.begin() + 1);
    LayoutMapView view;
    view.resize(900, 700);
    view.setLiveLayout(event);  // before the plan: the event alone, and planning said
    QVERIFY(view.header()->text().contains(QStringLiteral("Planning")));
    view.setLivePlan(plan);
    QVERIFY2(view.header()->text().contains(QStringLiteral("1 disagreement")),
             qPrintable(view.header()->text()));
    QVERIFY(view.differences()->count() >= 1);
    QCOMPARE(view.differences()->item(0)->data(Qt::UserRole + 1).toString(), dropped);
    QVERIFY(view.differences()->item(0)->text().contains(QStringLiteral("the run has no such unit")));
    QVERIFY(view.oursMap()->marked().contains(dropped));
    view.setLivePlanError(QStringLiteral("engine not found"));
    QVERIFY(view.header()->text().contains(QStringLiteral("engine not found")));
  }

  void nineBPresetPicture() {
    const app::Plan plan = cliPlan(QStringLiteral("openflamingo-9b-vitl-mpt7b"), {});
    const int ours = estimateOf(plan, "ours", "openflamingo", "full_shard");
    QVERIFY(ours >= 0);
    LayoutMapView view;
    view.resize(1600, 1100);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setPlan(plan, ours);
    QVERIFY(view.referenceMap()->isVisible());
    // The embedding: trainable here, the tied head's conflict in the reference.
    QString embedding;
    for (const auto& u : view.referenceMap()->map().units)
      if (!u.aliases.isEmpty()) embedding = u.path;
    QVERIFY(!embedding.isEmpty());
    view.selectUnit(embedding);
    test::savePicture(&view, QStringLiteral("layout-map-9b.png"));
  }
};

QTEST_MAIN(LayoutMapViewTest)
#include "layout_map_view_test.moc"

// LayoutTable: rows and columns from a LayoutEvent (one column per rank),
// human-readable cells, numeric sorting by the raw figures, the summary, and
// the gather window: the units a chosen rank had gathered at its peak
// (a memory event's gathered_at_peak) highlighted.
#include "ui/fsdp_layout/layout_table.h"

#include <QComboBox>
#include <QFont>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>

#include "../screenshot.h"
#include "ui/fsdp_layout/layout_model.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;

proto::LayoutEvent sampleLayout() {
  proto::LayoutEvent layout;
  layout.max_units_gathered = 2;
  layout.units.push_back(
      {"vision_encoder", 303'000'000, "bfloat16", false, 303'000'000, {151'500'000, 151'500'000}, 0, 0});
  layout.units.push_back({"lang_encoder.gated_cross_attn_layers.0",
                          50'000'000,
                          "float32",
                          true,
                          0,
                          {100'000'000, 100'000'000},
                          0,
                          1});
  layout.units.push_back({"lang_encoder.layers.0", 9'000, "float32", true, 1'000, {18'000, 18'004}, 1, 2});
  return layout;
}

QString cell(const QAbstractItemModel* model, int row, int column) {
  return model->data(model->index(row, column)).toString();
}

// Module paths of the rows the model marks, in row order.
QStringList marked(const QAbstractItemModel* model) {
  QStringList out;
  for (int row = 0; row < model->rowCount(); ++row) {
    if (model->data(model->index(row, LayoutModel::kPath), LayoutModel::kGatheredRole).toBool())
      out << cell(model, row, LayoutModel::kPath);
  }
  return out;
}

// The root first, as the engine writes it, then four units in gather order.
proto::LayoutEvent windowLayout() {
  proto::LayoutEvent layout;
  layout.max_units_gathered = 2;
  layout.units.push_back({"", 1'000, "float32", true, 0, {2'000, 2'000}, 0, 0});
  layout.units.push_back({"perceiver", 500, "float32", true, 0, {1'000, 1'000}, 0, 1});
  layout.units.push_back({"layers.0", 800, "float32", false, 800, {1'600, 1'600}, 0, 2});
  layout.units.push_back({"layers.1", 800, "float32", false, 800, {1'600, 1'600}, 0, 3});
  layout.units.push_back({"layers.2", 800, "float32", false, 800, {1'600, 1'600}, 0, 4});
  return layout;
}

proto::RankMemory rankPeak(int rank, std::optional<int> units, std::vector<int> atPeak) {
  proto::RankMemory r{rank, 1, 1, 1, 1, 1, 1, 1, std::nullopt, std::nullopt};
  r.gathered_units = units;
  r.gathered_at_peak = std::move(atPeak);
  return r;
}

}  // namespace

class LayoutTableTest : public QObject {
  Q_OBJECT
 private slots:
  void rowsAndColumnsFromTheEvent() {
    LayoutTable table;
    table.setLayout(sampleLayout());
    const LayoutModel* m = table.model();
    QCOMPARE(m->rowCount(), 3);
    QCOMPARE(m->rankCount(), 2);
    QCOMPARE(m->columnCount(), LayoutModel::kFirstRank + 2);
    QCOMPARE(m->headerData(LayoutModel::kFirstRank + 1, Qt::Horizontal).toString(), QStringLiteral("Rank 1"));

    table.resize(900, 200);
    QVERIFY(saveScreenshot(table, QStringLiteral("layout_table.png")));
    QCOMPARE(cell(m, 0, LayoutModel::kPath), QStringLiteral("vision_encoder"));
    QCOMPARE(cell(m, 0, LayoutModel::kParams), QStringLiteral("303 M"));
    QCOMPARE(cell(m, 0, LayoutModel::kDtype), QStringLiteral("bfloat16"));
    QCOMPARE(cell(m, 0, LayoutModel::kTrainable), QStringLiteral("frozen"));
    QCOMPARE(cell(m, 1, LayoutModel::kTrainable), QStringLiteral("trainable"));
    QCOMPARE(cell(m, 2, LayoutModel::kTrainable), QStringLiteral("partly (1.00 K frozen)"));
    QCOMPARE(cell(m, 0, LayoutModel::kFirstRank), QStringLiteral("144 MiB"));
    QCOMPARE(cell(m, 1, LayoutModel::kFirstRank + 1), QStringLiteral("95.4 MiB"));
    QCOMPARE(cell(m, 2, LayoutModel::kFirstRank + 1), QStringLiteral("17.6 KiB"));
    QCOMPARE(cell(m, 2, LayoutModel::kPadding), QStringLiteral("1"));
    QCOMPARE(m->data(m->index(2, LayoutModel::kFirstRank + 1), Qt::ToolTipRole).toString(),
             QStringLiteral("18,004 bytes"));
    QCOMPARE(m->data(m->index(0, LayoutModel::kParams), Qt::ToolTipRole).toString(),
             QStringLiteral("303,000,000 parameters"));
  }

  void sortsByTheRawNumbers() {
    LayoutTable table;
    table.setLayout(sampleLayout());
    QSortFilterProxyModel* sorted = table.sortedModel();
    // By bytes on rank 0, descending: 151.5M, 100M, 18K (text order would put "95.4 MiB" first).
    table.view()->sortByColumn(LayoutModel::kFirstRank, Qt::DescendingOrder);
    QCOMPARE(cell(sorted, 0, LayoutModel::kPath), QStringLiteral("vision_encoder"));
    QCOMPARE(cell(sorted, 1, LayoutModel::kPath), QStringLiteral("lang_encoder.gated_cross_attn_layers.0"));
    QCOMPARE(cell(sorted, 2, LayoutModel::kPath), QStringLiteral("lang_encoder.layers.0"));
    table.view()->sortByColumn(LayoutModel::kParams, Qt::AscendingOrder);
    QCOMPARE(cell(sorted, 0, LayoutModel::kPath), QStringLiteral("lang_encoder.layers.0"));
    QCOMPARE(cell(sorted, 2, LayoutModel::kPath), QStringLiteral("vision_encoder"));
    table.view()->sortByColumn(LayoutModel::kTrainable, Qt::AscendingOrder);
    QCOMPARE(cell(sorted, 0, LayoutModel::kTrainable), QStringLiteral("frozen"));
    QCOMPARE(cell(sorted, 2, LayoutModel::kTrainable), QStringLiteral("trainable"));
  }

  void summarySaysTotals() {
    LayoutTable table;
    table.setLayout(sampleLayout());
    QCOMPARE(table.summaryText(),
             QStringLiteral("3 unit(s), 353 M parameters (50.0 M trainable); 240 MiB per rank; "
                            "at most 2 unit(s) gathered at once"));
  }

  void aNewLayoutReplacesTheRows() {
    LayoutTable table;
    table.setLayout(sampleLayout());
    proto::LayoutEvent one;
    one.units.push_back({"model", 10, "float32", true, 0, {40}, 0, 0});
    table.setLayout(one);
    QCOMPARE(table.model()->rowCount(), 1);
    QCOMPARE(table.model()->columnCount(), LayoutModel::kFirstRank + 1);
    QCOMPARE(
        table.summaryText(),
        QStringLiteral(
            "1 unit(s), 10 parameters (10 trainable); 40 B per rank; no limit on units gathered at once"));
  }

  void highlightsTheUnitsGatheredTogetherAtTheChosenRanksPeak() {
    LayoutTable table;
    table.setLayout(windowLayout());
    const LayoutModel* m = table.model();
    QVERIFY(marked(m).isEmpty());
    QVERIFY(table.peakText().startsWith(QStringLiteral("No memory report yet")));

    proto::MemoryEvent memory;
    memory.step = 40;
    memory.ranks.push_back(rankPeak(0, 2, {2, 3}));
    memory.ranks.push_back(rankPeak(1, 2, {3, 4}));
    table.setMemory(memory);
    QCOMPARE(table.peakRankChoice()->count(), 2);
    QCOMPARE(marked(m), (QStringList{"layers.0", "layers.1"}));  // rank 0 first
    QCOMPARE(table.peakText(),
             QStringLiteral("Highlighted: the 2 unit(s) gathered together at rank 0's peak, step 40"));

    table.showPeakOf(1);
    QCOMPARE(marked(m), (QStringList{"layers.1", "layers.2"}));
    QCOMPARE(table.peakText(),
             QStringLiteral("Highlighted: the 2 unit(s) gathered together at rank 1's peak, step 40"));
    // Highlighted: a background over the alternating rows and bold text; frozen units stay grey.
    QVERIFY(m->data(m->index(4, LayoutModel::kParams), Qt::BackgroundRole).isValid());
    QVERIFY(!m->data(m->index(2, LayoutModel::kParams), Qt::BackgroundRole).isValid());
    QVERIFY(m->data(m->index(4, LayoutModel::kPath), Qt::FontRole).value<QFont>().bold());
    QVERIFY(m->data(m->index(4, LayoutModel::kPath), Qt::ForegroundRole).isValid());
    QVERIFY(m->data(m->index(4, LayoutModel::kPath), Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("together")));
    // Sorted some other way, the marks stay with their units.
    table.view()->sortByColumn(LayoutModel::kGatherOrder, Qt::DescendingOrder);
    QCOMPARE(marked(table.sortedModel()), (QStringList{"layers.2", "layers.1"}));
    table.resize(900, 260);
    QVERIFY(saveScreenshot(table, QStringLiteral("layout_table_gather_window.png")));

    // The next report keeps the chosen rank.
    memory.step = 50;
    memory.ranks[1] = rankPeak(1, 1, {1});
    table.setMemory(memory);
    QCOMPARE(marked(m), (QStringList{"perceiver"}));
    QCOMPARE(table.peakText(),
             QStringLiteral("Highlighted: the 1 unit(s) gathered together at rank 1's peak, step 50"));

    // An index the layout does not have is said, not drawn.
    memory.ranks[1] = rankPeak(1, 2, {4, 9});
    table.setMemory(memory);
    QCOMPARE(marked(m), (QStringList{"layers.2"}));
    QVERIFY(table.peakText().endsWith(QStringLiteral("(1 of them not in this layout)")));

    // A 1.1 engine reports how many, not which; no_shard gathers none; without FSDP nothing is counted.
    memory.ranks[1] = rankPeak(1, 2, {});
    table.setMemory(memory);
    QVERIFY(marked(m).isEmpty());
    QVERIFY(table.peakText().contains(QStringLiteral("does not say which")));
    memory.ranks[1] = rankPeak(1, 0, {});
    table.setMemory(memory);
    QCOMPARE(table.peakText(),
             QStringLiteral("Nothing highlighted: rank 1 gathered no unit apart from the root (step 50)"));
    memory.ranks[1] = rankPeak(1, std::nullopt, {});
    table.setMemory(memory);
    QCOMPARE(table.peakText(),
             QStringLiteral("Nothing highlighted: rank 1 gathers no units (not an FSDP run)"));

    // A new layout unmarks, and the latest report marks it again; another run clears both.
    memory.ranks[1] = rankPeak(1, 2, {3, 4});
    table.setMemory(memory);
    table.setLayout(windowLayout());
    QCOMPARE(marked(m), (QStringList{"layers.1", "layers.2"}));
    table.setMemory(proto::MemoryEvent{});
    QVERIFY(marked(m).isEmpty());
    QCOMPARE(table.peakRankChoice()->count(), 0);
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::LayoutTableTest)
#include "layout_table_test.moc"

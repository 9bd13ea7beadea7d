// LayoutTable: rows and columns from a LayoutEvent (one column per rank),
// human-readable cells, numeric sorting by the raw figures, the summary.
#include "ui/monitor/layout_table.h"

#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>

#include "screenshot.h"

#include "ui/monitor/layout_model.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;

proto::LayoutEvent sampleLayout() {
  proto::LayoutEvent layout;
  layout.max_units_gathered = 2;
  layout.units.push_back({"vision_encoder", 303'000'000, "bfloat16", false, 303'000'000, {151'500'000, 151'500'000}, 0, 0});
  layout.units.push_back({"lang_encoder.gated_cross_attn_layers.0", 50'000'000, "float32", true, 0,
                          {100'000'000, 100'000'000}, 0, 1});
  layout.units.push_back({"lang_encoder.layers.0", 9'000, "float32", true, 1'000, {18'000, 18'004}, 1, 2});
  return layout;
}

QString cell(const QAbstractItemModel* model, int row, int column) {
  return model->data(model->index(row, column)).toString();
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
    QCOMPARE(table.summaryText(),
             QStringLiteral("1 unit(s), 10 parameters (10 trainable); 40 B per rank; no limit on units gathered at once"));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::LayoutTableTest)
#include "layout_table_test.moc"

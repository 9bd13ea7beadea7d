// StringMapEditor (the Name / Value table of launch.env) and its binding to a
// ConfigDocument field (bindStringMap): rows in name order, edits as the user
// makes them reported as a map (nameless rows left out, names trimmed, values
// verbatim), the document's changes shown without undoing a row being typed,
// and the summary line quoting each NAME=VALUE as a shell reads it.
#include "ui/remote/string_map_editor.h"

#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

#include "app/config/config_document.h"
#include "ui/remote/field_binding.h"

namespace fs::ui {

namespace proto = fs::protocol;

class StringMapEditorTest : public QObject {
  Q_OBJECT

 private slots:
  void rowsEditsAndTheMap() {
    StringMapEditor editor;
    QSignalSpy edited(&editor, &StringMapEditor::mapEdited);
    editor.setMap({{"ZED", "z"}, {"ALPHA", " spaced 'q' "}});
    QCOMPARE(edited.count(), 0);  // setMap is not an edit
    QCOMPARE(editor.table()->rowCount(), 2);
    QCOMPARE(editor.table()->item(0, 0)->text(), QStringLiteral("ALPHA"));
    QCOMPARE(editor.table()->item(0, 1)->text(), QStringLiteral(" spaced 'q' "));

    editor.table()->item(1, 1)->setText(QStringLiteral("new"));
    QCOMPARE(edited.count(), 1);
    QCOMPARE(editor.map(), (proto::StringMap{{"ALPHA", " spaced 'q' "}, {"ZED", "new"}}));
    editor.table()->item(1, 0)->setText(QStringLiteral("  ZED2 "));  // names are trimmed
    QCOMPARE(editor.map(), (proto::StringMap{{"ALPHA", " spaced 'q' "}, {"ZED2", "new"}}));

    // A new row is nothing until it has a name.
    editor.findChild<QToolButton*>(QStringLiteral("add"))->click();
    QCOMPARE(editor.table()->rowCount(), 3);
    QCOMPARE(edited.count(), 2);
    QCOMPARE(editor.map().size(), std::size_t{2});
    editor.table()->item(2, 1)->setText(QStringLiteral("v"));
    QCOMPARE(editor.map().size(), std::size_t{2});
    editor.table()->item(2, 0)->setText(QStringLiteral("NEW"));
    QCOMPARE(editor.map().at("NEW"), std::string("v"));

    editor.removeRow(0);
    QCOMPARE(editor.map(), (proto::StringMap{{"NEW", "v"}, {"ZED2", "new"}}));
    editor.addEntry(QStringLiteral("NEW"), QStringLiteral("later"));  // a name twice: the lower row wins
    QCOMPARE(editor.map().at("NEW"), std::string("later"));
    editor.setMap({});
    QCOMPARE(editor.table()->rowCount(), 0);
  }

  void boundToADocumentFieldBothWays() {
    app::ConfigDocument doc;
    StringMapEditor editor;
    QLabel summary;
    bindStringMap(&editor, &doc, QStringLiteral("launch.env"), &summary);
    QCOMPARE(editor.objectName(), QStringLiteral("field:launch.env"));
    QCOMPARE(summary.objectName(), QStringLiteral("summary:launch.env"));
    QCOMPARE(summary.text(), QStringLiteral("none"));

    editor.addEntry(QStringLiteral("OPENBLAS_CORETYPE"), QStringLiteral("Haswell"));
    editor.addEntry(QStringLiteral("ODD"), QStringLiteral("it's $(x) \"q\""));
    QCOMPARE(doc.config().launch.env,
             (proto::StringMap{{"ODD", "it's $(x) \"q\""}, {"OPENBLAS_CORETYPE", "Haswell"}}));
    QCOMPARE(summary.text(), QStringLiteral("'ODD=it'\\''s $(x) \"q\"' OPENBLAS_CORETYPE=Haswell"));

    // A row being typed survives the document's echo of an edit of another row.
    editor.findChild<QToolButton*>(QStringLiteral("add"))->click();
    QCOMPARE(editor.table()->rowCount(), 3);
    editor.table()->item(0, 1)->setText(QStringLiteral("Zen"));
    QCOMPARE(doc.config().launch.env.at("OPENBLAS_CORETYPE"), std::string("Zen"));
    QCOMPARE(editor.table()->rowCount(), 3);

    // The document's own changes (a loaded file, the config form) come back to the table.
    QVERIFY(doc.setFieldValue("launch.env", proto::Value(proto::StringMap{{"B", "2"}})).isOk());
    QCOMPARE(editor.map(), (proto::StringMap{{"B", "2"}}));
    QCOMPARE(editor.table()->rowCount(), 1);
    QCOMPARE(summary.text(), QStringLiteral("B=2"));
    proto::RunConfig c = doc.config();
    c.launch.env.clear();
    doc.setConfig(c);
    QCOMPARE(editor.table()->rowCount(), 0);
    QCOMPARE(summary.text(), QStringLiteral("none"));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::StringMapEditorTest)
#include "string_map_editor_test.moc"

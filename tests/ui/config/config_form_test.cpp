// The schema-generated config form: every preset round-trips through the
// editors, edits through the widgets reach the document, each validation
// problem shows beside its field, and appliesWhen hides mmc4-only fields.
#include "ui/config/config_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QToolButton>
#include <QtTest>

#include "app/config/config_document.h"
#include "backend/protocol/config/config_yaml.h"
#include "ui/config/dataset_list_editor.h"
#include "ui/config/field_editor.h"
#include "ui/config/field_row.h"
#include "ui/config/form_registry.h"
#include "ui/config/problem_label.h"
#include "ui/config/problem_list.h"
#include "ui/config/string_list_editor.h"
#include "ui/remote/string_map_editor.h"

namespace fs::ui {
namespace {

namespace proto = fs::protocol;

const char* const kPresets[] = {"tiny", "small", "openflamingo-3b-vitl-mpt1b", "openflamingo-4b-vitl-rpj3b",
                                "openflamingo-9b-vitl-mpt7b"};

QString presetPath(const char* name) {
  return QStringLiteral(FS_SOURCE_DIR "/resources/presets/%1.yaml").arg(QLatin1String(name));
}

proto::RunConfig readPreset(const char* name) {
  auto load = proto::loadConfigFile(QFile::encodeName(presetPath(name)).toStdString());
  if (!load.ok()) qFatal("preset %s: %s", name, proto::formatProblems(load.problems).c_str());
  return load.config;
}

std::vector<std::string> fieldPaths(const proto::RunConfig& config) {
  std::vector<std::string> out;
  proto::forEachField(
      proto::runConfigSchema(), &config,
      [&](const std::string& path, const proto::EntrySpec&, const void*) { out.push_back(path); });
  return out;
}

template <class W>
W* input(ConfigForm& form, const QString& path) {
  auto* w = form.findChild<W*>(editorObjectName(path));
  if (w == nullptr)
    qWarning("no %s named %s", W::staticMetaObject.className(), qPrintable(editorObjectName(path)));
  return w;
}

// Replaces the text of a line edit or spin box as a user would: select all, type.
void retype(QWidget* w, const QString& text) {
  if (auto* line = qobject_cast<QLineEdit*>(w)) line->selectAll();
  if (auto* spin = qobject_cast<QAbstractSpinBox*>(w)) spin->selectAll();
  QTest::keyClicks(w, text);
}

}  // namespace

class ConfigFormTest : public QObject {
  Q_OBJECT

 private slots:
  void roundTripsEveryPreset() {
    for (const char* name : kPresets) {
      const proto::RunConfig expected = readPreset(name);
      app::ConfigDocument doc;
      ConfigForm form(&doc);
      QSignalSpy loaded(&doc, &app::ConfigDocument::loaded);
      doc.loadFile(presetPath(name));
      QVERIFY2(loaded.wait(5000), name);
      QVERIFY(doc.config() == expected);

      // Everything the editors hold, written into a fresh document, gives the preset back.
      app::ConfigDocument rebuilt;
      while (rebuilt.listSize("data.datasets") > 0) rebuilt.removeDataset(0);
      for (const auto& d : expected.data.datasets) rebuilt.addDataset(d.type);
      for (const auto& path : fieldPaths(expected)) {
        const QString qpath = QString::fromStdString(path);
        FieldEditor* editor = form.editor(qpath);
        QVERIFY2(editor != nullptr, path.c_str());
        const auto value = editor->value();
        QVERIFY2(value.has_value(), path.c_str());
        QVERIFY2(*value == doc.fieldValue(path).value(), (std::string(name) + ": " + path).c_str());
        QVERIFY2(rebuilt.setFieldValue(path, *value).isOk(), path.c_str());
      }
      QVERIFY2(rebuilt.config() == expected, name);
      // No editor for a path the config does not have (stale dataset rows).
      QCOMPARE(form.findChildren<FieldRow*>().size(), static_cast<qsizetype>(fieldPaths(expected).size()));
    }
  }

  void editorsMatchFieldTypes() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    QVERIFY(input<QCheckBox>(form, "model.gradient_checkpointing"));
    QVERIFY(input<QComboBox>(form, "optim.precision"));
    QVERIFY(input<QSpinBox>(form, "data.datasets[0].batch_size"));
    QVERIFY(input<QLineEdit>(form, "data.datasets[0].samples_per_epoch"));  // no max: beyond int
    QVERIFY(input<QLineEdit>(form, "optim.lr"));                            // floats keep exact text
    QVERIFY(input<QLineEdit>(form, "name"));
    QVERIFY(input<StringListEditor>(form, "parallel.wrap_patterns"));
    QVERIFY(input<StringMapEditor>(form, "launch.env"));
    QCOMPARE(input<QSpinBox>(form, "parallel.collective_timeout_s")->suffix(), QStringLiteral(" s"));
    const QString tip = input<QSpinBox>(form, "data.datasets[0].batch_size")->toolTip();
    QVERIFY2(tip.contains(QStringLiteral("Per-rank batch")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("samples")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("[1, 1048576]")), qPrintable(tip));
    QVERIFY(input<QComboBox>(form, "optim.precision")->toolTip().contains(QStringLiteral("amp_bf16")));
  }

  void editsThroughWidgetsReachTheDocument() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    doc.setConfig(readPreset("tiny"));

    input<QCheckBox>(form, "model.gradient_checkpointing")->click();
    QCOMPARE(doc.config().model.gradient_checkpointing, true);

    retype(input<QSpinBox>(form, "data.datasets[0].batch_size"), QStringLiteral("12"));
    QCOMPARE(doc.config().data.datasets[0].batch_size, int64_t{12});

    auto* lr = input<QLineEdit>(form, "optim.lr");
    retype(lr, QStringLiteral("2e-4"));
    QCOMPARE(doc.config().optim.lr, 2e-4);
    QVERIFY(form.problemLabel("optim.lr")->inputError().isEmpty());
    retype(lr, QStringLiteral("fast"));
    QCOMPARE(doc.config().optim.lr, 2e-4);  // not applied
    QVERIFY(!form.problemLabel("optim.lr")->inputError().isEmpty());
    QVERIFY(!form.problemLabel("optim.lr")->isHidden());
    retype(lr, QStringLiteral("3e-4"));
    QVERIFY(form.problemLabel("optim.lr")->inputError().isEmpty());

    retype(input<QLineEdit>(form, "data.datasets[0].samples_per_epoch"), QStringLiteral("5000000000"));
    QCOMPARE(doc.config().data.datasets[0].samples_per_epoch, int64_t{5'000'000'000});

    retype(input<QLineEdit>(form, "name"), QStringLiteral("my-run"));
    QCOMPARE(doc.config().name, std::string("my-run"));

    auto* scheduler = input<QComboBox>(form, "optim.scheduler");
    scheduler->setFocus();
    QTest::keyClick(scheduler, Qt::Key_Up);  // cosine -> linear
    QCOMPARE(doc.config().optim.scheduler, std::string("linear"));

    auto* patterns = input<StringListEditor>(form, "parallel.wrap_patterns");
    patterns->addItem(QStringLiteral("lang_encoder.*"));
    patterns->addItem(QStringLiteral("vision_encoder"));
    QCOMPARE(doc.config().parallel.wrap_patterns,
             (std::vector<std::string>{"lang_encoder.*", "vision_encoder"}));
    patterns->removeItem(0);
    QCOMPARE(doc.config().parallel.wrap_patterns, std::vector<std::string>{"vision_encoder"});

    // And the other way: the document's changes show in the editors.
    QVERIFY(doc.setField("optim.lr", "0.5").isOk());
    QCOMPARE(lr->text(), QStringLiteral("0.5"));
    QVERIFY(doc.setField("data.datasets[1].batch_size", "33").isOk());
    QCOMPARE(input<QSpinBox>(form, "data.datasets[1].batch_size")->value(), 33);
    QVERIFY(doc.setField("data.datasets[0].name", "pairs").isOk());
    QCOMPARE(form.listEditors().front()->tabBar()->tabText(0), QStringLiteral("pairs"));
  }

  void outOfRangeValuesAreShownNotClamped() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    proto::RunConfig c = readPreset("tiny");
    c.data.datasets[0].batch_size = 0;              // min 1
    c.data.datasets[1].batch_size = 5'000'000'000;  // beyond int
    c.optim.precision = "fp8";                      // not a choice
    doc.setConfig(c);
    QCOMPARE(form.editor("data.datasets[0].batch_size")->value().value(), proto::Value(int64_t{0}));
    QCOMPARE(form.editor("data.datasets[1].batch_size")->value().value(),
             proto::Value(int64_t{5'000'000'000}));
    QCOMPARE(form.editor("optim.precision")->value().value(), proto::Value(std::string("fp8")));
    QVERIFY(input<QComboBox>(form, "optim.precision")->currentText().contains(QStringLiteral("not allowed")));
  }

  void everyProblemShowsBesideItsField() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    proto::RunConfig c = readPreset("tiny");
    c.name = "";                            // required
    c.data.datasets[0].batch_size = 0;      // range
    c.optim.precision = "fp8";              // choices
    c.data.datasets[1].min_num_images = 5;  // > max_num_images 2 (cross-field)
    c.launch.nnodes = 2;                    // local runs are one node
    c.model.tokens.image_id = 500;          // >= tokens.vocab_size
    c.parallel.mode = "fsdp";
    c.parallel.wrap_policy = "custom";  // with no wrap_patterns
    c.model.vision.path = "ViT-L-14";   // pretrained weights that will not fit: a section-level warning
    c.model.vision.pretrained = "openai";
    doc.setConfig(c);

    const auto& problems = doc.problems();
    QStringList paths;
    for (const auto& p : problems) paths << QString::fromStdString(p.path);
    for (const char* expected :
         {"name", "data.datasets[0].batch_size", "optim.precision", "data.datasets[1].min_num_images",
          "launch.nnodes", "model.tokens.image_id", "parallel.wrap_patterns", "model.vision"}) {
      QVERIFY2(paths.contains(QLatin1String(expected)), qPrintable(expected + (": " + paths.join(", "))));
    }
    for (const auto& p : problems) {
      const QString path = QString::fromStdString(p.path);
      auto* label = form.findChild<ProblemLabel*>(problemLabelObjectName(path));
      QVERIFY2(label != nullptr, qPrintable(path));
      QVERIFY2(!label->isHidden(), qPrintable(path));
      const QString text =
          QString(label->text()).replace(QStringLiteral("<br>"), QStringLiteral(" "));  // wrapped lines
      QVERIFY2(text.contains(QString::fromStdString(p.message).toHtmlEscaped()),
               qPrintable(path + ": " + text));
      if (!p.fix.empty())
        QVERIFY2(text.contains(QString::fromStdString(p.fix).toHtmlEscaped()), qPrintable(text));
      // A field's label sits in that field's row, right under its editor.
      if (auto* row = form.row(path)) QCOMPARE(label->parentWidget(), static_cast<QWidget*>(row));
    }
    QCOMPARE(form.problemList()->list()->count(), static_cast<int>(problems.size()));
    // Fields without problems show nothing.
    QVERIFY(form.problemLabel("optim.lr")->isHidden());

    // Fixing a field through its editor clears its label.
    retype(input<QSpinBox>(form, "data.datasets[0].batch_size"), QStringLiteral("4"));
    QVERIFY(form.problemLabel("data.datasets[0].batch_size")->isHidden());

    // Picking a problem in the summary shows its tab.
    form.focusField(QStringLiteral("data.datasets[1].min_num_images"));
    QCOMPARE(form.sectionTabs()->tabText(form.sectionTabs()->currentIndex()), QStringLiteral("data"));
    QCOMPARE(form.listEditors().front()->currentIndex(), 1);
  }

  // launch.env, a string map: a Name / Value table, both ways, and its refusals beside it.
  void stringMapFieldEditsBothWaysAndShowsItsProblems() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    doc.setConfig(readPreset("tiny"));
    auto* env = input<StringMapEditor>(form, "launch.env");
    QVERIFY(env != nullptr);
    QCOMPARE(env->table()->rowCount(), 0);
    QVERIFY(env->toolTip().contains(QStringLiteral("every rank")));

    env->addEntry(QStringLiteral("OPENBLAS_CORETYPE"), QStringLiteral("Haswell"));
    env->addEntry(QStringLiteral("ODD"), QStringLiteral(" it's \"q\" $(x) "));
    QCOMPARE(doc.config().launch.env,
             (proto::StringMap{{"ODD", " it's \"q\" $(x) "}, {"OPENBLAS_CORETYPE", "Haswell"}}));
    env->table()->item(0, 1)->setText(QStringLiteral("Zen"));  // as typed into the cell
    QCOMPARE(doc.config().launch.env.at("OPENBLAS_CORETYPE"), std::string("Zen"));
    QCOMPARE(env->table()->rowCount(), 2);  // the rows stay as the user made them
    env->removeRow(1);
    QCOMPARE(doc.config().launch.env, (proto::StringMap{{"OPENBLAS_CORETYPE", "Zen"}}));
    QVERIFY(form.problemLabel("launch.env")->isHidden());

    // The document's changes show in the table; a refused name shows beside the field, naming itself.
    QVERIFY(
        doc.setFieldValue("launch.env", proto::Value(proto::StringMap{{"RANK", "3"}, {"A", "b"}})).isOk());
    QCOMPARE(env->table()->rowCount(), 2);
    QCOMPARE(env->table()->item(1, 0)->text(), QStringLiteral("RANK"));
    QCOMPARE(env->map(), (proto::StringMap{{"A", "b"}, {"RANK", "3"}}));
    auto* label = form.problemLabel("launch.env");
    QVERIFY(!label->isHidden());
    QVERIFY2(label->text().contains(QStringLiteral("launch.env.RANK")), qPrintable(label->text()));
    QVERIFY2(label->text().contains(QStringLiteral("set by the launcher")), qPrintable(label->text()));
  }

  void appliesWhenHidesMmc4FieldsOnLaion() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    doc.setConfig(readPreset("tiny"));  // [0] laion, [1] mmc4
    for (const char* key : {"textsim_threshold", "max_num_images", "min_num_images"}) {
      FieldRow* laion = form.row(QStringLiteral("data.datasets[0].") + key);
      FieldRow* mmc4 = form.row(QStringLiteral("data.datasets[1].") + key);
      QVERIFY(laion != nullptr && mmc4 != nullptr);
      QVERIFY2(laion->isHidden() && laion->keyLabel()->isHidden(), key);
      QVERIFY2(!mmc4->isHidden() && !mmc4->keyLabel()->isHidden(), key);
    }
    QVERIFY(!form.row(QStringLiteral("data.datasets[0].batch_size"))->isHidden());

    // Switching the type through its combo box shows them.
    auto* type = input<QComboBox>(form, "data.datasets[0].type");
    type->setFocus();
    QTest::keyClick(type, Qt::Key_Down);  // laion -> mmc4
    QCOMPARE(doc.config().data.datasets[0].type, std::string("mmc4"));
    QVERIFY(!form.row(QStringLiteral("data.datasets[0].textsim_threshold"))->isHidden());
  }

  void datasetsAddAndRemoveThroughTheButtons() {
    app::ConfigDocument doc;
    ConfigForm form(&doc);
    doc.setConfig(readPreset("tiny"));
    DatasetListEditor* list = form.listEditors().front();
    QCOMPARE(list->count(), 2);
    const auto actions = list->addButton()->menu()->actions();
    QCOMPARE(actions.size(), 2);  // laion, mmc4: the type's choices
    actions[1]->trigger();
    QCOMPARE(doc.config().data.datasets.size(), size_t{3});
    QCOMPARE(doc.config().data.datasets[2].type, std::string("mmc4"));
    QCOMPARE(list->count(), 3);
    QCOMPARE(list->currentIndex(), 2);
    QCOMPARE(list->tabBar()->tabText(2), QStringLiteral("mmc4-2"));
    QVERIFY(form.editor("data.datasets[2].textsim_threshold") != nullptr);

    list->showElement(0);
    list->removeButton()->click();
    QCOMPARE(doc.config().data.datasets.size(), size_t{2});
    QCOMPARE(list->count(), 2);
    QCOMPARE(list->tabBar()->tabText(0), QStringLiteral("mmc4"));
    QVERIFY(form.row(QStringLiteral("data.datasets[2].name")) == nullptr);
    // The editors of the moved element show its values.
    QCOMPARE(form.editor("data.datasets[0].batch_size")->value().value(), proto::Value(int64_t{2}));
  }
};

}  // namespace fs::ui

QTEST_MAIN(fs::ui::ConfigFormTest)
#include "config_form_test.moc"

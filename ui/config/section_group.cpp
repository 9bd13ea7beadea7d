#include "ui/config/section_group.h"

#include <QFormLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "app/config/config_document.h"
#include "ui/config/dataset_list_editor.h"
#include "ui/config/field_editor.h"
#include "ui/config/field_row.h"
#include "ui/config/form_registry.h"
#include "ui/config/problem_label.h"

namespace fs::ui {
namespace {

QString join(const QString& prefix, const std::string& key) {
  const QString k = QString::fromStdString(key);
  return prefix.isEmpty() ? k : prefix + QLatin1Char('.') + k;
}

}  // namespace

SectionGroup::SectionGroup(const protocol::SectionSpec& spec, const QString& prefix, const QString& title,
                           Contents contents, app::ConfigDocument* document, FormRegistry* registry,
                           QWidget* parent)
    : QGroupBox(title, parent),
      prefix_(prefix),
      document_(document),
      registry_(registry),
      form_(new QFormLayout) {
  setObjectName(QStringLiteral("section:") + prefix);
  setToolTip(QString::fromStdString(spec.help));
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form_->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form_->setRowWrapPolicy(QFormLayout::DontWrapRows);

  auto* layout = new QVBoxLayout(this);
  if (contents == Contents::kAll && !prefix.isEmpty()) {
    auto* problems = new ProblemLabel(prefix);  // cross-field problems of the section ("model.lm")
    layout->addWidget(problems);
    registry_->addProblemLabel(prefix, problems);
  }
  layout->addLayout(form_);

  for (const auto& entry : spec.entries) {
    const QString path = join(prefix, entry.key);
    switch (entry.kind) {
      case protocol::EntrySpec::Kind::kField:
        addField(entry, path);
        break;
      case protocol::EntrySpec::Kind::kSection:
        if (contents == Contents::kAll) {
          form_->addRow(new SectionGroup(*entry.section, path, QString::fromStdString(entry.key),
                                         Contents::kAll, document_, registry_));
        }
        break;
      case protocol::EntrySpec::Kind::kList:
        if (contents == Contents::kAll)
          form_->addRow(new DatasetListEditor(entry, path, document_, registry_));
        break;
    }
  }
}

void SectionGroup::addField(const protocol::EntrySpec& entry, const QString& path) {
  FieldEditor* editor = FieldEditor::create(entry, path);
  auto* row = new FieldRow(editor);
  auto* key =
      new QLabel(QString::fromStdString(entry.key) + (entry.required ? QStringLiteral(" *") : QString()));
  key->setToolTip(fieldToolTip(entry));
  key->setBuddy(editor->input());
  row->addTo(form_, key);
  registry_->addRow(path, row);
  registry_->addProblemLabel(path, row->problemLabel());
  app::ConfigDocument* doc = document_;
  connect(editor, &FieldEditor::edited, doc, [doc](const QString& p, const protocol::Value& v) {
    doc->setFieldValue(p.toStdString(), v);  // only fails on a type mismatch, which editors never produce
  });
}

}  // namespace fs::ui

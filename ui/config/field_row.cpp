#include "ui/config/field_row.h"

#include <QFormLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/config/field_editor.h"
#include "ui/config/form_registry.h"
#include "ui/config/problem_label.h"

namespace fs::ui {

FieldRow::FieldRow(FieldEditor* editor, QWidget* parent)
    : QWidget(parent), editor_(editor), problems_(new ProblemLabel(editor->path())) {
  setObjectName(rowObjectName(editor->path()));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(editor_);
  layout->addWidget(problems_);
  setFocusProxy(editor_);
  connect(editor_, &FieldEditor::inputError, problems_, &ProblemLabel::setInputError);
}

void FieldRow::addTo(QFormLayout* form, QLabel* keyLabel) {
  form_ = form;
  keyLabel_ = keyLabel;
  form->addRow(keyLabel, this);
}

QString FieldRow::path() const {
  return editor_->path();
}

void FieldRow::setApplies(bool applies) {
  if (applies == applies_) return;
  applies_ = applies;
  if (form_ != nullptr)
    form_->setRowVisible(this, applies);
  else
    setVisible(applies);
}

}  // namespace fs::ui

// FieldRow: one field of the form: its editor with the problems beside it.
//
// The key label sits in the form layout's label column; the row hides both
// when the field does not apply (see EntrySpec::appliesWhen).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>

class QFormLayout;
class QLabel;

namespace fs::ui {

class FieldEditor;
class ProblemLabel;

class FieldRow : public QWidget {
  Q_OBJECT
 public:
  // Takes `editor`; named rowObjectName(editor->path()).
  explicit FieldRow(FieldEditor* editor, QWidget* parent = nullptr);

  // Adds this row to `form` under `keyLabel`; setApplies() uses the form.
  void addTo(QFormLayout* form, QLabel* keyLabel);

  QString path() const;
  FieldEditor* editor() const { return editor_; }
  ProblemLabel* problemLabel() const { return problems_; }
  QLabel* keyLabel() const { return keyLabel_; }

  // Shows or hides the whole row (key label included).
  void setApplies(bool applies);
  bool applies() const { return applies_; }

 private:
  FieldEditor* editor_;
  ProblemLabel* problems_;
  QFormLayout* form_ = nullptr;
  QLabel* keyLabel_ = nullptr;
  bool applies_ = true;
};

}  // namespace fs::ui

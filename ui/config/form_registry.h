// FormRegistry: the config form's widgets by field path.
//
// Every field row and every problem label registers under the canonical path
// it shows ("optim.lr", "data.datasets[1]", "data.datasets"), and carries an
// object name derived from that path, so the form and tests find a field's
// widgets without knowing the layout.
//
// Ownership: holds QPointers only; the widgets belong to their parents.
// Thread-safety: GUI thread only.
#pragma once

#include <QHash>
#include <QList>
#include <QPointer>
#include <QString>

namespace fs::ui {

class FieldRow;
class ProblemLabel;

// "editor:<path>": the input widget of a field (QCheckBox, QSpinBox, QLineEdit, ...).
QString editorObjectName(const QString& path);
// "problem:<path>": the label that shows the problems at a field or section.
QString problemLabelObjectName(const QString& path);
// "row:<path>": a field's row (editor and problem label).
QString rowObjectName(const QString& path);
// The path one level up: "a.b[1].c" -> "a.b[1]" -> "a.b" -> "a" -> "".
QString parentPath(const QString& path);

class FormRegistry {
 public:
  void addRow(const QString& path, FieldRow* row);
  void addProblemLabel(const QString& path, ProblemLabel* label);
  // Forgets every entry whose path starts with `prefix` (a list being rebuilt).
  void removeUnder(const QString& prefix);

  FieldRow* row(const QString& path) const;
  ProblemLabel* problemLabel(const QString& path) const;
  // The label that shows a problem at `path`: its own, else the nearest
  // ancestor's; nullptr when none (the problem is shown in the summary only).
  ProblemLabel* labelFor(const QString& path) const;
  QList<FieldRow*> rows() const;
  QList<ProblemLabel*> problemLabels() const;

 private:
  QHash<QString, QPointer<FieldRow>> rows_;
  QHash<QString, QPointer<ProblemLabel>> labels_;
};

}  // namespace fs::ui

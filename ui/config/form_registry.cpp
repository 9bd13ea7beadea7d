#include "ui/config/form_registry.h"

#include <algorithm>

#include "ui/config/field_row.h"
#include "ui/config/problem_label.h"

namespace fs::ui {

QString editorObjectName(const QString& path) {
  return QStringLiteral("editor:") + path;
}
QString problemLabelObjectName(const QString& path) {
  return QStringLiteral("problem:") + path;
}
QString rowObjectName(const QString& path) {
  return QStringLiteral("row:") + path;
}

QString parentPath(const QString& path) {
  const qsizetype cut = std::max(path.lastIndexOf(QLatin1Char('.')), path.lastIndexOf(QLatin1Char('[')));
  return cut < 0 ? QString() : path.left(cut);
}

void FormRegistry::addRow(const QString& path, FieldRow* row) {
  rows_.insert(path, row);
}

void FormRegistry::addProblemLabel(const QString& path, ProblemLabel* label) {
  labels_.insert(path, label);
}

void FormRegistry::removeUnder(const QString& prefix) {
  rows_.removeIf([&](const auto& it) { return it.key().startsWith(prefix); });
  labels_.removeIf([&](const auto& it) { return it.key().startsWith(prefix); });
}

FieldRow* FormRegistry::row(const QString& path) const {
  return rows_.value(path);
}

ProblemLabel* FormRegistry::problemLabel(const QString& path) const {
  return labels_.value(path);
}

ProblemLabel* FormRegistry::labelFor(const QString& path) const {
  for (QString p = path; !p.isEmpty(); p = parentPath(p)) {
    if (ProblemLabel* label = labels_.value(p)) return label;
  }
  return labels_.value(QString());
}

QList<FieldRow*> FormRegistry::rows() const {
  QList<FieldRow*> out;
  for (const auto& row : rows_) {
    if (row) out.push_back(row);
  }
  return out;
}

QList<ProblemLabel*> FormRegistry::problemLabels() const {
  QList<ProblemLabel*> out;
  for (const auto& label : labels_) {
    if (label) out.push_back(label);
  }
  return out;
}

}  // namespace fs::ui

// StringMapEditor: a small two-column table (Name, Value) with add and remove,
// the editor of a string-map config field (launch.env). The Launch tab binds one to
// launch.env (field_binding.h); the config form's FieldEditor uses one for every
// string-map field.
//
// Cells are edited in place (double-click or F2). Names are trimmed and rows
// without a name are left out of map(); values are kept exactly as typed. When
// a name is on two rows, the lower row's value wins. The buttons are named "add" and
// "remove". Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "backend/protocol/config/schema.h"

class QTableWidget;
class QToolButton;

namespace fs::ui {

class StringMapEditor : public QWidget {
  Q_OBJECT
 public:
  explicit StringMapEditor(QWidget* parent = nullptr);

  // Replaces the rows (one per entry, in name order) without emitting mapEdited().
  void setMap(const protocol::StringMap& map);
  // The rows with a name.
  protocol::StringMap map() const;

  // Adds a row as if the user had added it and typed `name` and `value`.
  void addEntry(const QString& name, const QString& value);
  // Removes the row at `row` as if the user had removed it.
  void removeRow(int row);

  QTableWidget* table() const { return table_; }

 signals:
  // The user changed a name or a value, added or removed a row; map() has the result.
  void mapEdited();

 private:
  void appendRow(const QString& name, const QString& value);
  void updateHeight();

  QTableWidget* table_;
  QToolButton* add_;
  QToolButton* remove_;
};

}  // namespace fs::ui

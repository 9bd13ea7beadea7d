// Binds a plain editor (QLineEdit, QSpinBox, StringMapEditor) to one field of the ConfigDocument:
// the user's edits go to the document (setField, so the schema parses and
// checks them), and the document's changes of that field (an edit in the
// config form, a loaded file) come back to the editor. The page and the form
// therefore never disagree.
//
// Ownership: the binding is a child of the editor. Thread-safety: GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QLineEdit;
class QSpinBox;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class StringMapEditor;

// The field's current value as text ("" when the path names no field).
QString fieldText(const app::ConfigDocument& document, const QString& path);

// Text fields: applied when editing finishes (Enter, focus out).
void bindLineEdit(QLineEdit* edit, app::ConfigDocument* document, const QString& path);
// Integer fields: applied on every change.
void bindSpinBox(QSpinBox* spin, app::ConfigDocument* document, const QString& path);
// String-map fields (launch.env): applied on every edit of a cell, a row added or removed.
// `summary`, when given, shows the field as NAME=VALUE words quoted for a shell, exactly as
// a launcher logs them ("none" when empty), and is named "summary:<path>".
void bindStringMap(StringMapEditor* editor, app::ConfigDocument* document, const QString& path,
                   QLabel* summary = nullptr);

}  // namespace fs::ui

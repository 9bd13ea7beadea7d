// Binds a plain editor (QLineEdit, QSpinBox) to one field of the ConfigDocument:
// the user's edits go to the document (setField, so the schema parses and
// checks them), and the document's changes of that field (an edit in the
// config form, a loaded file) come back to the editor. The page and the form
// therefore never disagree.
//
// Ownership: the binding is a child of the editor. Thread-safety: GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QLineEdit;
class QSpinBox;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

// The field's current value as text ("" when the path names no field).
QString fieldText(const app::ConfigDocument& document, const QString& path);

// Text fields: applied when editing finishes (Enter, focus out).
void bindLineEdit(QLineEdit* edit, app::ConfigDocument* document, const QString& path);
// Integer fields: applied on every change.
void bindSpinBox(QSpinBox* spin, app::ConfigDocument* document, const QString& path);

}  // namespace fs::ui

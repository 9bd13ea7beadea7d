// FieldEditor: the editor of one config field, chosen from its schema entry.
//
//   bool                      QCheckBox
//   choice                    QComboBox (a value outside the choices is shown, marked)
//   integer, range in int     QSpinBox with the unit as suffix
//   integer beyond int range  QLineEdit, parsed exactly as int64
//   number                    QLineEdit, shortest round-trip text (never rounded)
//   string                    QLineEdit
//   list of strings           StringListEditor
//   mapping of strings        StringMapEditor (ui/remote/string_map_editor.h): Name / Value table
//
// The tooltip is the help text, unit, allowed values and default. The editor
// shows values (setValue) and reports the user's edits (edited); it never
// touches the document itself. A value outside the allowed range is still
// shown as it is, so the validation problem beside it makes sense.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QMetaType>
#include <QString>
#include <QWidget>
#include <optional>

#include "backend/protocol/config/schema.h"

namespace fs::ui {

// Help, unit, allowed values, default and condition, one per line.
QString fieldToolTip(const protocol::EntrySpec& spec);

class FieldEditor : public QWidget {
  Q_OBJECT
 public:
  // REQUIRES: spec.kind == kField; spec outlives the editor (the schema is static).
  static FieldEditor* create(const protocol::EntrySpec& spec, const QString& path, QWidget* parent = nullptr);

  const protocol::EntrySpec& spec() const { return spec_; }
  QString path() const { return path_; }
  // The widget that takes the input, named editorObjectName(path).
  QWidget* input() const { return input_; }

  // Shows `value` without emitting edited(). A value equal to what the editor
  // holds leaves it untouched, so typing is never interrupted.
  // REQUIRES: the alternative matching spec().type.
  virtual void setValue(const protocol::Value& value) = 0;
  // What the editor holds; nullopt while its text does not parse.
  virtual std::optional<protocol::Value> value() const = 0;

 signals:
  void edited(const QString& path, const fs::protocol::Value& value);
  // Why the text cannot be applied; "" once it can again.
  void inputError(const QString& message);

 protected:
  FieldEditor(const protocol::EntrySpec& spec, const QString& path, QWidget* parent);
  // Places `input` (and the unit after it unless `unitShown`), names it, sets tooltips.
  void setInput(QWidget* input, bool unitShown);

 private:
  const protocol::EntrySpec& spec_;
  QString path_;
  QWidget* input_ = nullptr;
};

}  // namespace fs::ui

Q_DECLARE_METATYPE(fs::protocol::Value)

#include "ui/remote/field_binding.h"

#include <QLineEdit>
#include <QSpinBox>

#include "app/config/config_document.h"

namespace fs::ui {

QString fieldText(const app::ConfigDocument& document, const QString& path) {
  const std::string p = path.toStdString();
  const protocol::EntrySpec* spec = document.fieldSpec(p);
  auto value = document.fieldValue(p);
  if (!spec || !value) return {};
  return QString::fromStdString(protocol::valueToText(*spec, value.value()));
}

namespace {

// Calls `show` now and whenever the document's field at `path` may have changed.
template <class Show>
void follow(QObject* editor, app::ConfigDocument* document, const QString& path, Show show) {
  show();
  QObject::connect(document, &app::ConfigDocument::fieldChanged, editor,
                   [path, show](const QString& changed) {
                     if (changed == path) show();
                   });
  QObject::connect(document, &app::ConfigDocument::configReset, editor, show);
}

}  // namespace

void bindLineEdit(QLineEdit* edit, app::ConfigDocument* document, const QString& path) {
  edit->setObjectName(QStringLiteral("field:") + path);
  follow(edit, document, path, [edit, document, path] {
    const QString text = fieldText(*document, path);
    if (edit->text() != text) edit->setText(text);
  });
  QObject::connect(edit, &QLineEdit::editingFinished, edit, [edit, document, path] {
    if (edit->text() == fieldText(*document, path)) return;
    if (auto s = document->setField(path.toStdString(), edit->text().toStdString()); !s) {
      edit->setToolTip(QString::fromStdString(s.message()));
    } else {
      edit->setToolTip({});
    }
  });
}

void bindSpinBox(QSpinBox* spin, app::ConfigDocument* document, const QString& path) {
  spin->setObjectName(QStringLiteral("field:") + path);
  spin->setKeyboardTracking(false);
  follow(spin, document, path, [spin, document, path] {
    bool ok = false;
    const int value = fieldText(*document, path).toInt(&ok);
    if (ok && spin->value() != value) {
      const QSignalBlocker quiet(spin);
      spin->setValue(value);
    }
  });
  QObject::connect(spin, &QSpinBox::valueChanged, spin, [spin, document, path](int value) {
    if (fieldText(*document, path) != QString::number(value))
      document->setField(path.toStdString(), std::to_string(value));
    (void)spin;
  });
}

}  // namespace fs::ui

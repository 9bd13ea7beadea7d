#include "ui/remote/field_binding.h"

#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

#include "app/config/config_document.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "ui/remote/string_map_editor.h"

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

void bindStringMap(StringMapEditor* editor, app::ConfigDocument* document, const QString& path,
                   QLabel* summary) {
  editor->setObjectName(QStringLiteral("field:") + path);
  if (summary) {
    summary->setObjectName(QStringLiteral("summary:") + path);
    summary->setTextFormat(Qt::PlainText);
    summary->setWordWrap(true);
    summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  }
  const std::string p = path.toStdString();
  auto current = [document, p]() -> protocol::StringMap {
    auto value = document->fieldValue(p);
    if (!value || !std::holds_alternative<protocol::StringMap>(value.value())) return {};
    return std::get<protocol::StringMap>(value.value());
  };
  follow(editor, document, path, [editor, summary, current] {
    const protocol::StringMap map = current();
    if (editor->map() != map) editor->setMap(map);
    if (!summary) return;
    std::vector<std::string> words;
    for (const auto& [name, value] : map) words.push_back(name + "=" + value);
    summary->setText(words.empty() ? QObject::tr("none")
                                   : QString::fromStdString(protocol::joinShellWords(words)));
  });
  QObject::connect(editor, &StringMapEditor::mapEdited, editor, [editor, document, p, current] {
    const protocol::StringMap map = editor->map();
    if (map != current()) document->setFieldValue(p, protocol::Value(map));
  });
}

}  // namespace fs::ui

#include "ui/config/field_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <algorithm>
#include <climits>

#include "ui/config/form_registry.h"
#include "ui/config/string_list_editor.h"
#include "ui/remote/string_map_editor.h"

namespace fs::ui {
namespace {

using protocol::EntrySpec;
using protocol::FieldType;
using protocol::Value;

// One width for every number editor so the form reads as a column.
constexpr int kNumberWidth = 170;

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

class CheckBoxEditor : public FieldEditor {
 public:
  CheckBoxEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), box_(new QCheckBox) {
    setInput(box_, false);
    connect(box_, &QCheckBox::toggled, this, [this](bool on) { emit edited(this->path(), Value(on)); });
  }
  void setValue(const Value& v) override {
    const QSignalBlocker block(box_);
    box_->setChecked(std::get<bool>(v));
  }
  std::optional<Value> value() const override { return Value(box_->isChecked()); }

 private:
  QCheckBox* box_;
};

// Choices as items whose data is the exact value; a value that is not a
// choice (from a hand-written YAML) gets one extra, marked item.
class ComboEditor : public FieldEditor {
 public:
  ComboEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), combo_(new QComboBox) {
    for (const auto& c : spec.choices) combo_->addItem(qs(c), qs(c));
    combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    setInput(combo_, false);
    connect(combo_, &QComboBox::activated, this, [this](int index) {
      emit edited(this->path(), Value(combo_->itemData(index).toString().toStdString()));
    });
  }
  void setValue(const Value& v) override {
    const QString text = qs(std::get<std::string>(v));
    const QSignalBlocker block(combo_);
    while (combo_->count() > static_cast<int>(spec().choices.size())) combo_->removeItem(combo_->count() - 1);
    int index = combo_->findData(text);
    if (index < 0) {
      combo_->addItem(tr("%1 (not allowed)").arg(text.isEmpty() ? tr("empty") : text), text);
      index = combo_->count() - 1;
    }
    combo_->setCurrentIndex(index);
  }
  std::optional<Value> value() const override {
    return Value(combo_->currentData().toString().toStdString());
  }

 private:
  QComboBox* combo_;
};

// QSpinBox for integers whose schema range fits an int. Its range is the
// schema range widened to the value shown, so nothing is ever clamped; a
// value beyond int (only from a hand-written file) is shown as special text.
class SpinEditor : public FieldEditor {
 public:
  SpinEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), spin_(new QSpinBox) {
    spin_->setRange(lo(), hi());
    if (!spec.unit.empty()) spin_->setSuffix(QLatin1Char(' ') + qs(spec.unit));
    spin_->setAccelerated(true);
    spin_->setFixedWidth(kNumberWidth);
    setInput(spin_, true);
    connect(spin_, &QSpinBox::valueChanged, this, [this](int v) {
      beyondInt_.reset();
      spin_->setSpecialValueText(QString());
      emit edited(this->path(), Value(static_cast<int64_t>(v)));
    });
  }
  static bool fits(const EntrySpec& spec) {
    return spec.min && spec.max && *spec.min >= INT_MIN && *spec.max <= INT_MAX;
  }
  void setValue(const Value& v) override {
    if (value() == v) return;
    const int64_t x = std::get<int64_t>(v);
    const QSignalBlocker block(spin_);
    if (x < INT_MIN || x > INT_MAX) {
      beyondInt_ = x;
      spin_->setRange(INT_MIN, hi());
      spin_->setSpecialValueText(QString::number(x));
      spin_->setValue(INT_MIN);
      return;
    }
    beyondInt_.reset();
    spin_->setSpecialValueText(QString());
    const int i = static_cast<int>(x);
    spin_->setRange(std::min(i, lo()), std::max(i, hi()));
    spin_->setValue(i);
  }
  std::optional<Value> value() const override {
    return Value(beyondInt_ ? *beyondInt_ : static_cast<int64_t>(spin_->value()));
  }

 private:
  int lo() const { return static_cast<int>(*spec().min); }
  int hi() const { return static_cast<int>(*spec().max); }

  QSpinBox* spin_;
  std::optional<int64_t> beyondInt_;
};

// QLineEdit parsed with the schema's own text rules (valueFromText), so what
// the YAML and --set accept is what the form accepts: exact int64 and
// doubles in shortest round-trip form, and plain strings.
class TextEditor : public FieldEditor {
 public:
  TextEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), line_(new QLineEdit) {
    if (spec.type != FieldType::kString) line_->setFixedWidth(kNumberWidth);
    setInput(line_, false);
    connect(line_, &QLineEdit::textEdited, this, [this](const QString& text) {
      auto parsed = parse(text);
      if (!parsed.isOk()) {
        emit inputError(qs(parsed.status().message()));
        return;
      }
      emit inputError(QString());
      emit edited(this->path(), parsed.value());
    });
  }
  void setValue(const Value& v) override {
    if (value() == v) return;
    line_->setText(qs(protocol::valueToText(spec(), v)));
    emit inputError(QString());
  }
  std::optional<Value> value() const override {
    auto parsed = parse(line_->text());
    if (!parsed.isOk()) return std::nullopt;
    return parsed.value();
  }

 private:
  protocol::StatusOr<Value> parse(const QString& text) const {
    // Strings are kept exactly as typed; numbers go through the schema's parser.
    if (spec().type == FieldType::kString) return Value(text.toStdString());
    return protocol::valueFromText(spec(), text.toStdString(), path().toStdString());
  }

  QLineEdit* line_;
};

class ListEditor : public FieldEditor {
 public:
  ListEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), list_(new StringListEditor) {
    setInput(list_, false);
    connect(list_, &StringListEditor::itemsEdited, this, [this](const QStringList& items) {
      std::vector<std::string> v;
      for (const auto& s : items) v.push_back(s.toStdString());
      emit edited(this->path(), Value(std::move(v)));
    });
  }
  void setValue(const Value& v) override {
    if (value() == v) return;
    QStringList items;
    for (const auto& s : std::get<std::vector<std::string>>(v)) items << qs(s);
    list_->setItems(items);
  }
  std::optional<Value> value() const override {
    std::vector<std::string> v;
    for (const auto& s : list_->items()) v.push_back(s.toStdString());
    return Value(std::move(v));
  }

 private:
  StringListEditor* list_;
};

class MapEditor : public FieldEditor {
 public:
  MapEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
      : FieldEditor(spec, path, parent), map_(new StringMapEditor) {
    setInput(map_, false);
    connect(map_, &StringMapEditor::mapEdited, this,
            [this] { emit edited(this->path(), Value(map_->map())); });
  }
  void setValue(const Value& v) override {
    const auto& map = std::get<protocol::StringMap>(v);
    if (map_->map() != map) map_->setMap(map);  // rows being typed stay
  }
  std::optional<Value> value() const override { return std::optional<Value>(std::in_place, map_->map()); }

 private:
  StringMapEditor* map_;
};

}  // namespace

QString fieldToolTip(const EntrySpec& spec) {
  QStringList lines;
  lines << qs(spec.help);
  if (!spec.unit.empty()) lines << QObject::tr("Unit: %1").arg(qs(spec.unit));
  lines << QObject::tr("Allowed: %1").arg(qs(protocol::describeAllowed(spec)));
  const std::string def = protocol::valueToText(spec, spec.defaultValue);
  lines << QObject::tr("Default: %1").arg(def.empty() ? QObject::tr("(empty)") : qs(def));
  if (!spec.appliesWhen.empty()) lines << QObject::tr("Only when %1").arg(qs(spec.appliesWhen));
  return lines.join(QLatin1Char('\n'));
}

FieldEditor* FieldEditor::create(const EntrySpec& spec, const QString& path, QWidget* parent) {
  switch (spec.type) {
    case FieldType::kBool:
      return new CheckBoxEditor(spec, path, parent);
    case FieldType::kEnum:
      return new ComboEditor(spec, path, parent);
    case FieldType::kInt:
      if (SpinEditor::fits(spec)) return new SpinEditor(spec, path, parent);
      return new TextEditor(spec, path, parent);
    case FieldType::kFloat:
    case FieldType::kString:
      return new TextEditor(spec, path, parent);
    case FieldType::kStringList:
      return new ListEditor(spec, path, parent);
    case FieldType::kStringMap:
      return new MapEditor(spec, path, parent);
  }
  return new TextEditor(spec, path, parent);
}

FieldEditor::FieldEditor(const EntrySpec& spec, const QString& path, QWidget* parent)
    : QWidget(parent), spec_(spec), path_(path) {
  setObjectName(QStringLiteral("field:") + path);
}

void FieldEditor::setInput(QWidget* input, bool unitShown) {
  input_ = input;
  input->setObjectName(editorObjectName(path_));
  input->setToolTip(fieldToolTip(spec_));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(input);
  if (!unitShown && !spec_.unit.empty()) layout->addWidget(new QLabel(qs(spec_.unit)));
  // Text fields take the width; compact editors stay at their size.
  if (spec_.type != FieldType::kString && spec_.type != FieldType::kStringList &&
      spec_.type != FieldType::kStringMap)
    layout->addStretch(1);
  setFocusProxy(input);
}

}  // namespace fs::ui

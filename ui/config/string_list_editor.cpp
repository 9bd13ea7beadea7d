#include "ui/config/string_list_editor.h"

#include <QHBoxLayout>
#include <QListWidget>
#include <QSignalBlocker>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

namespace fs::ui {

StringListEditor::StringListEditor(QWidget* parent)
    : QWidget(parent), list_(new QListWidget), add_(new QToolButton), remove_(new QToolButton) {
  add_->setText(QStringLiteral("+"));
  add_->setToolTip(tr("Add an item"));
  remove_->setText(QStringLiteral("\u2212"));
  remove_->setToolTip(tr("Remove the selected item"));
  list_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                         QAbstractItemView::SelectedClicked);
  auto* buttons = new QVBoxLayout;
  buttons->addWidget(add_);
  buttons->addWidget(remove_);
  buttons->addStretch(1);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(list_, 1);
  layout->addLayout(buttons);
  setFocusProxy(list_);
  updateHeight();

  connect(add_, &QToolButton::clicked, this, [this] {
    auto* item = new QListWidgetItem;  // empty until typed: not reported until then
    item->setFlags(item->flags() | Qt::ItemIsEditable);
    list_->addItem(item);
    list_->setCurrentItem(item);
    list_->editItem(item);
    updateHeight();
  });
  connect(remove_, &QToolButton::clicked, this, [this] {
    if (list_->currentRow() >= 0) removeItem(list_->currentRow());
  });
  connect(list_, &QListWidget::itemChanged, this, [this] { emit itemsEdited(items()); });
}

void StringListEditor::setItems(const QStringList& items) {
  const QSignalBlocker block(list_);
  list_->clear();
  for (const auto& text : items) {
    auto* item = new QListWidgetItem(text, list_);
    item->setFlags(item->flags() | Qt::ItemIsEditable);
  }
  updateHeight();
}

QStringList StringListEditor::items() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i) {
    const QString text = list_->item(i)->text().trimmed();
    if (!text.isEmpty()) out << text;
  }
  return out;
}

void StringListEditor::addItem(const QString& text) {
  auto* item = new QListWidgetItem(text);
  item->setFlags(item->flags() | Qt::ItemIsEditable);
  list_->addItem(item);
  updateHeight();
  emit itemsEdited(items());
}

void StringListEditor::removeItem(int row) {
  delete list_->takeItem(row);
  updateHeight();
  emit itemsEdited(items());
}

void StringListEditor::updateHeight() {
  // Two to six rows tall: a short list stays short, a long one scrolls.
  const int rowHeight = list_->fontMetrics().height() + 6;
  const int rows = std::clamp(list_->count() + 1, 2, 6);
  list_->setFixedHeight(rows * rowHeight + 2 * list_->frameWidth());
}

}  // namespace fs::ui

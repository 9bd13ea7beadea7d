#include "ui/remote/string_map_editor.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

namespace fs::ui {

StringMapEditor::StringMapEditor(QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(0, 2)), add_(new QToolButton), remove_(new QToolButton) {
  table_->setHorizontalHeaderLabels({tr("Name"), tr("Value")});
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                          QAbstractItemView::SelectedClicked);
  add_->setObjectName(QStringLiteral("add"));
  add_->setText(QStringLiteral("+"));
  add_->setToolTip(tr("Add a variable"));
  remove_->setObjectName(QStringLiteral("remove"));
  remove_->setText(QStringLiteral("\u2212"));
  remove_->setToolTip(tr("Remove the selected variable"));
  auto* buttons = new QVBoxLayout;
  buttons->addWidget(add_);
  buttons->addWidget(remove_);
  buttons->addStretch(1);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_, 1);
  layout->addLayout(buttons);
  setFocusProxy(table_);
  updateHeight();

  connect(add_, &QToolButton::clicked, this, [this] {
    {
      const QSignalBlocker block(table_);  // a row without a name is not an entry yet
      appendRow({}, {});
    }
    const int row = table_->rowCount() - 1;
    table_->setCurrentCell(row, 0);
    table_->editItem(table_->item(row, 0));
  });
  connect(remove_, &QToolButton::clicked, this, [this] {
    if (table_->currentRow() >= 0) removeRow(table_->currentRow());
  });
  connect(table_, &QTableWidget::itemChanged, this, [this] { emit mapEdited(); });
}

void StringMapEditor::setMap(const protocol::StringMap& map) {
  const QSignalBlocker block(table_);
  table_->setRowCount(0);
  for (const auto& [name, value] : map)
    appendRow(QString::fromStdString(name), QString::fromStdString(value));
  updateHeight();
}

protocol::StringMap StringMapEditor::map() const {
  protocol::StringMap out;
  for (int row = 0; row < table_->rowCount(); ++row) {
    const QTableWidgetItem* name = table_->item(row, 0);
    const QTableWidgetItem* value = table_->item(row, 1);
    const QString key = name ? name->text().trimmed() : QString();
    if (key.isEmpty()) continue;
    out[key.toStdString()] = value ? value->text().toStdString() : std::string();
  }
  return out;
}

void StringMapEditor::addEntry(const QString& name, const QString& value) {
  {
    const QSignalBlocker block(table_);
    appendRow(name, value);
  }
  emit mapEdited();
}

void StringMapEditor::removeRow(int row) {
  table_->removeRow(row);
  updateHeight();
  emit mapEdited();
}

void StringMapEditor::appendRow(const QString& name, const QString& value) {
  const int row = table_->rowCount();
  table_->insertRow(row);
  table_->setItem(row, 0, new QTableWidgetItem(name));
  table_->setItem(row, 1, new QTableWidgetItem(value));
  updateHeight();
}

void StringMapEditor::updateHeight() {
  // Two to six rows tall, as StringListEditor: a short table stays short, a long one scrolls.
  const int rowHeight = table_->fontMetrics().height() + 8;
  const int rows = std::clamp(table_->rowCount() + 1, 2, 6);
  table_->setFixedHeight(table_->horizontalHeader()->sizeHint().height() + rows * rowHeight +
                         2 * table_->frameWidth());
}

}  // namespace fs::ui

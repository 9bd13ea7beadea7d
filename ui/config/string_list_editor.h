// StringListEditor: a small editable list of strings with add and remove.
//
// Items are edited in place (double-click or F2). Empty items are dropped
// from what itemsEdited() reports. Thread-safety: GUI thread only.
#pragma once

#include <QStringList>
#include <QWidget>

class QListWidget;
class QToolButton;

namespace fs::ui {

class StringListEditor : public QWidget {
  Q_OBJECT
 public:
  explicit StringListEditor(QWidget* parent = nullptr);

  // Replaces the items without emitting itemsEdited().
  void setItems(const QStringList& items);
  // Non-empty items, in order.
  QStringList items() const;

  // Adds an item with `text` as if the user had added and typed it.
  void addItem(const QString& text);
  // Removes the item at `row` as if the user had removed it.
  void removeItem(int row);

  QListWidget* list() const { return list_; }

 signals:
  void itemsEdited(const QStringList& items);

 private:
  void updateHeight();

  QListWidget* list_;
  QToolButton* add_;
  QToolButton* remove_;
};

}  // namespace fs::ui

// DefaultsDiffDialog: read-only table of every field whose value differs
// from the schema's default (ConfigDocument::diffAgainstDefaults), kept up to
// date while the form is edited. Non-modal.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QDialog>

class QLabel;
class QTableWidget;

namespace fs::app {
class ConfigDocument;
}

namespace fs::ui {

class DefaultsDiffDialog : public QDialog {
  Q_OBJECT
 public:
  DefaultsDiffDialog(app::ConfigDocument* document, QWidget* parent = nullptr);

  QTableWidget* table() const { return table_; }

 public slots:
  void refresh();

 private:
  app::ConfigDocument* document_;
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace fs::ui

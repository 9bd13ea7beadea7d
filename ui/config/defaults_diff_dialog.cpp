#include "ui/config/defaults_diff_dialog.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/config/config_document.h"

namespace fs::ui {

DefaultsDiffDialog::DefaultsDiffDialog(app::ConfigDocument* document, QWidget* parent)
    : QDialog(parent), document_(document), summary_(new QLabel), table_(new QTableWidget) {
  setWindowTitle(tr("Changes from the defaults"));
  setObjectName(QStringLiteral("defaultsDiffDialog"));
  table_->setColumnCount(3);
  table_->setHorizontalHeaderLabels({tr("Field"), tr("Default"), tr("This config")});
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  connect(document_, &app::ConfigDocument::fieldChanged, this, &DefaultsDiffDialog::refresh);
  connect(document_, &app::ConfigDocument::datasetsChanged, this, &DefaultsDiffDialog::refresh);
  connect(document_, &app::ConfigDocument::configReset, this, &DefaultsDiffDialog::refresh);
  resize(760, 520);
  refresh();
}

void DefaultsDiffDialog::refresh() {
  const auto diffs = document_->diffAgainstDefaults();
  table_->setRowCount(static_cast<int>(diffs.size()));
  const QString absent = tr("(absent)");
  for (int row = 0; row < static_cast<int>(diffs.size()); ++row) {
    const auto& d = diffs[static_cast<size_t>(row)];
    table_->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(d.path)));
    table_->setItem(row, 1,
                    new QTableWidgetItem(d.defaultText ? QString::fromStdString(*d.defaultText) : absent));
    table_->setItem(row, 2,
                    new QTableWidgetItem(d.currentText ? QString::fromStdString(*d.currentText) : absent));
  }
  table_->resizeColumnsToContents();
  summary_->setText(
      diffs.empty() ? tr("This config is the default config.")
                    : tr("%n field(s) differ from the defaults.", nullptr, static_cast<int>(diffs.size())));
}

}  // namespace fs::ui

#include "ui/history/config_diff_table.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace fs::ui {

ConfigDiffTable::ConfigDiffTable(QWidget* parent)
    : QWidget(parent), note_(new QLabel), table_(new QTableWidget) {
  setObjectName(QStringLiteral("configDiffTable"));
  note_->setWordWrap(true);
  note_->setStyleSheet(QStringLiteral("color: #666"));
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(note_);
  layout->addWidget(table_, 1);
  showNote(tr("Select two or more runs to compare their configs."));
}

QString ConfigDiffTable::note() const {
  return note_->isVisibleTo(this) ? note_->text() : QString();
}

void ConfigDiffTable::showNote(const QString& note) {
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
  note_->setText(note);
  note_->setVisible(true);
}

void ConfigDiffTable::showDiff(const app::RunConfigDiff& diff) {
  if (!diff.error.isEmpty()) {
    showNote(diff.error);
    return;
  }
  table_->clear();
  table_->setColumnCount(static_cast<int>(diff.labels.size()) + 1);
  table_->setHorizontalHeaderLabels(QStringList{tr("Field")} + diff.labels);
  table_->setRowCount(static_cast<int>(diff.fields.size()));
  for (int row = 0; row < diff.fields.size(); ++row) {
    const app::ConfigDiffField& field = diff.fields[row];
    table_->setItem(row, 0, new QTableWidgetItem(field.path));
    for (int k = 0; k < field.values.size(); ++k) {
      auto* item = new QTableWidgetItem(field.values[k] ? *field.values[k] : QStringLiteral("\u2014"));
      if (!field.values[k]) item->setToolTip(tr("this run has no such field"));
      table_->setItem(row, k + 1, item);
    }
  }
  table_->resizeColumnsToContents();
  if (diff.fields.isEmpty()) {
    note_->setText(
        tr("The configs of these %n runs are the same.", nullptr, static_cast<int>(diff.runIds.size())));
    note_->setVisible(true);
  } else {
    note_->setVisible(false);
  }
}

}  // namespace fs::ui

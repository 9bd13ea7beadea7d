#include "ui/remote/preflight_table_view.h"

#include <QApplication>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QStyle>
#include <QTableWidget>
#include <QVBoxLayout>

namespace fs::ui {
namespace {

using app::cluster::CheckStatus;

QColor colourOf(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return QColor(0x2e, 0x7d, 0x32);
    case CheckStatus::kWarn:
      return QColor(0xc7, 0x7c, 0x02);
    case CheckStatus::kFail:
      return QColor(0xc6, 0x28, 0x28);
    case CheckStatus::kSkipped:
      break;
  }
  return QColor(0x75, 0x75, 0x75);
}

QIcon iconOf(CheckStatus s) {
  QStyle* style = QApplication::style();
  switch (s) {
    case CheckStatus::kOk:
      return style->standardIcon(QStyle::SP_DialogApplyButton);
    case CheckStatus::kWarn:
      return style->standardIcon(QStyle::SP_MessageBoxWarning);
    case CheckStatus::kFail:
      return style->standardIcon(QStyle::SP_MessageBoxCritical);
    case CheckStatus::kSkipped:
      break;
  }
  return style->standardIcon(QStyle::SP_MediaSkipForward);
}

QTableWidgetItem* item(const QString& text) {
  auto* it = new QTableWidgetItem(text);
  it->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  it->setToolTip(text);
  return it;
}

}  // namespace

PreflightTableView::PreflightTableView(QWidget* parent)
    : QWidget(parent),
      summary_(new QLabel),
      view_(new QTableWidget(0, kColumnCount)),
      actions_(new QPlainTextEdit) {
  setObjectName(QStringLiteral("preflightTableView"));
  view_->setHorizontalHeaderLabels({tr("Host"), tr("Check"), tr("Status"), tr("Value")});
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setAlternatingRowColors(true);
  actions_->setReadOnly(true);
  actions_->setPlaceholderText(tr("No action needed."));
  actions_->setMaximumHeight(110);
  summary_->setTextFormat(Qt::PlainText);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
  layout->addWidget(new QLabel(tr("Actions:")));
  layout->addWidget(actions_);
}

void PreflightTableView::clear() {
  setTable({});
  summary_->clear();
}

void PreflightTableView::setTable(const app::cluster::PreflightTable& table) {
  table_ = table;
  view_->setRowCount(static_cast<int>(table.rows.size()));
  QStringList actions;
  int failed = 0, warned = 0;
  for (int r = 0; r < static_cast<int>(table.rows.size()); ++r) {
    const auto& row = table.rows[static_cast<std::size_t>(r)];
    const QString host = row.node == 0 ? tr("%1 (node 0)").arg(QString::fromStdString(row.host))
                                       : QString::fromStdString(row.host);
    view_->setItem(r, kHost, item(host));
    view_->setItem(r, kCheck, item(QString::fromStdString(std::string(toString(row.check)))));
    auto* status = item(QString::fromStdString(std::string(toString(row.status))));
    status->setIcon(iconOf(row.status));
    status->setForeground(colourOf(row.status));
    QFont bold = status->font();
    bold.setBold(row.status == CheckStatus::kFail || row.status == CheckStatus::kWarn);
    status->setFont(bold);
    view_->setItem(r, kStatus, status);
    view_->setItem(r, kValue, item(QString::fromStdString(row.value)));
    if (!row.action.empty()) actions << QString::fromStdString(row.action);
    failed += row.status == CheckStatus::kFail;
    warned += row.status == CheckStatus::kWarn;
  }
  for (int c = 0; c < kValue; ++c) view_->resizeColumnToContents(c);  // the value column stretches
  actions_->setPlainText(actions.join(QLatin1Char('\n')));
  if (table.rows.empty())
    summary_->setText(tr("No checks run yet."));
  else if (failed > 0)
    summary_->setText(
        tr("%1 check(s) failed, %2 warning(s): fix the failures before launching.").arg(failed).arg(warned));
  else if (warned > 0)
    summary_->setText(tr("Ready to launch, with %1 warning(s).").arg(warned));
  else
    summary_->setText(tr("Every check passed."));
}

QString PreflightTableView::actionsText() const {
  return actions_->toPlainText();
}

}  // namespace fs::ui

#include "ui/runs/runs_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/config/problem_label.h"

namespace fs::ui {
namespace {

enum Column { kName, kState, kCreated, kRanks, kLauncher, kColumns };

}  // namespace

RunsPanel::RunsPanel(QWidget* parent)
    : QWidget(parent),
      header_(new QLabel),
      status_(new QLabel),
      table_(new QTreeWidget),
      timer_(new QTimer(this)) {
  setObjectName(QStringLiteral("runsPanel"));
  auto* refreshButton = new QToolButton;
  refreshButton->setText(tr("Refresh"));
  connect(refreshButton, &QToolButton::clicked, this, &RunsPanel::refresh);
  header_->setTextFormat(Qt::RichText);
  header_->setWordWrap(true);
  status_->setWordWrap(true);
  status_->setStyleSheet(QStringLiteral("color: #666"));

  table_->setColumnCount(kColumns);
  table_->setHeaderLabels({tr("Run"), tr("State"), tr("Created"), tr("Ranks"), tr("Launcher")});
  table_->setRootIsDecorated(false);
  table_->setAlternatingRowColors(true);
  table_->setSortingEnabled(false);  // the scan's order: newest first
  table_->setIndentation(12);
  table_->setWordWrap(true);
  table_->header()->setStretchLastSection(true);

  auto* top = new QHBoxLayout;
  top->addWidget(header_, 1);
  top->addWidget(refreshButton);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  layout->addWidget(status_);

  connect(timer_, &QTimer::timeout, this, [this] {
    if (isVisible()) refresh();
  });
  connect(table_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString dir = item->data(kName, Qt::UserRole).toString();
    if (!dir.isEmpty()) emit runActivated(dir);
  });
  setAutoRefreshSeconds(5);
}

void RunsPanel::setRoot(const QString& root) {
  if (root == root_) return;
  root_ = root;
  header_->setText(tr("<b>Runs</b> in %1").arg(root.toHtmlEscaped()));
  table_->clear();
  status_->setText(tr("Reading\u2026"));
  pending_ = false;  // a result for the old root is dropped when it comes
  refresh();
}

void RunsPanel::setAutoRefreshSeconds(int seconds) {
  if (seconds <= 0)
    timer_->stop();
  else
    timer_->start(seconds * 1000);
}

void RunsPanel::refresh() {
  if (root_.isEmpty() || pending_) return;
  pending_ = true;
  emit scanRequested(root_);
}

void RunsPanel::setScan(const fs::app::RunScan& scan) {
  if (scan.root != root_) return;
  pending_ = false;
  if (scan.cancelled) return;
  table_->clear();
  int unreadable = 0;
  for (const auto& run : scan.runs) {
    auto* item = new QTreeWidgetItem(table_);
    item->setText(kName, run.name);
    item->setToolTip(kName, run.dir);
    item->setData(kName, Qt::UserRole, run.dir);
    if (run.isOk()) {
      item->setText(kState, run.state);
      item->setText(kCreated, QLocale().toString(run.created.toLocalTime(), QLocale::ShortFormat));
      item->setText(kRanks, QString::number(run.worldSize));
      item->setText(kLauncher, run.launcher);
      item->setToolTip(kState, tr("run id %1").arg(run.runId));
    } else {
      // The reason on its own line under the run: it is long, and the row already names the run
      // (the message starts with the file's full path, dropped here; the tooltip keeps it).
      ++unreadable;
      item->setText(kState, tr("unreadable"));
      auto* reason = new QTreeWidgetItem(item);
      reason->setText(kName, QString(run.error).replace(run.dir + QLatin1Char('/'), QString()));
      reason->setFirstColumnSpanned(true);
      for (QTreeWidgetItem* it : {item, reason}) {
        for (int c = 0; c < kColumns; ++c) {
          it->setForeground(c, QColor(QLatin1String(kErrorColor)));
          it->setToolTip(c, run.error);
        }
      }
      item->setExpanded(true);
    }
  }
  for (int c = 0; c + 1 < kColumns; ++c) table_->resizeColumnToContents(c);
  if (scan.rootMissing) {
    status_->setText(tr("No runs yet: the folder does not exist."));
  } else if (!scan.error.isEmpty()) {
    status_->setText(scan.error);
  } else if (scan.runs.isEmpty()) {
    status_->setText(tr("No runs yet."));
  } else {
    status_->setText(
        unreadable == 0
            ? tr("%n run(s)", nullptr, static_cast<int>(scan.runs.size()))
            : tr("%n run(s), %1 unreadable", nullptr, static_cast<int>(scan.runs.size())).arg(unreadable));
  }
}

}  // namespace fs::ui

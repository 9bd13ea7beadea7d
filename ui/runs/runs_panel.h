// RunsPanel: the run directories under the run root, as a table.
//
// Shows what a RunScan says (name, state, created, ranks, launcher; an
// unreadable run.json as a red row with the reason). It never reads the disk:
// it asks for scans through scanRequested() — when the root changes, on
// Refresh, and every few seconds while shown and no scan is pending — and is
// given results through setScan().
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>

#include "app/runs/run_catalog.h"

class QLabel;
class QTimer;
class QTreeWidget;

namespace fs::ui {

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(QWidget* parent = nullptr);

  // Absolute path of the run root; a new root is scanned at once.
  void setRoot(const QString& root);
  QString root() const { return root_; }
  // Seconds between automatic scans while shown; 0 turns them off.
  void setAutoRefreshSeconds(int seconds);

  QTreeWidget* table() const { return table_; }

 public slots:
  // Asks for a scan of the current root unless one is pending.
  void refresh();
  // Shows a scan's result; results for another root than the current one are dropped.
  void setScan(const fs::app::RunScan& scan);

 signals:
  void scanRequested(const QString& root);
  // A run double-clicked (or Enter): its absolute directory, to follow it.
  void runActivated(const QString& runDir);

 private:
  QString root_;
  bool pending_ = false;
  QLabel* header_;
  QLabel* status_;
  QTreeWidget* table_;
  QTimer* timer_;
};

}  // namespace fs::ui

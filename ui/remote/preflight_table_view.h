// PreflightTableView: a pre-flight table (app/cluster/preflight.h) as a table —
// host, check, status (coloured, with an icon), value — and below it every
// action a failing or warning row asks for, each naming its host.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>

#include "app/cluster/preflight.h"

class QLabel;
class QPlainTextEdit;
class QTableWidget;

namespace fs::ui {

class PreflightTableView : public QWidget {
  Q_OBJECT
 public:
  enum Column { kHost, kCheck, kStatus, kValue, kColumnCount };

  explicit PreflightTableView(QWidget* parent = nullptr);

  void setTable(const app::cluster::PreflightTable& table);
  void clear();
  const app::cluster::PreflightTable& table() const { return table_; }

  QTableWidget* tableWidget() const { return view_; }
  // The actions, one per line ("" when there are none).
  QString actionsText() const;

 private:
  app::cluster::PreflightTable table_;
  QLabel* summary_;
  QTableWidget* view_;
  QPlainTextEdit* actions_;
};

}  // namespace fs::ui

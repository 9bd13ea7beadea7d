// ProblemList: every validation problem of the config in one list, the
// summary beside the inline labels. Activating an entry asks the form to show
// its field.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>
#include <QWidget>
#include <vector>

#include "backend/protocol/problem.h"

class QLabel;
class QListWidget;

namespace fs::ui {

class ProblemList : public QWidget {
  Q_OBJECT
 public:
  explicit ProblemList(QWidget* parent = nullptr);

  void setProblems(const std::vector<protocol::Problem>& problems);
  QListWidget* list() const { return list_; }

 signals:
  // The user picked the problem at `path` ("" for the whole config).
  void problemActivated(const QString& path);

 private:
  QLabel* header_;
  QListWidget* list_;
};

}  // namespace fs::ui

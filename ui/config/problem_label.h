// ProblemLabel: the validation problems at one field or section, shown beside it.
//
// Errors in red, warnings in orange, each with its suggested fix; hidden when
// there is nothing to say. Also shows why an editor's text does not parse
// (that text never reaches the document, so validation cannot report it).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QLabel>
#include <QString>
#include <vector>

#include "backend/protocol/problem.h"

namespace fs::ui {

class ProblemLabel : public QLabel {
  Q_OBJECT
 public:
  // Named problemLabelObjectName(path).
  explicit ProblemLabel(const QString& path, QWidget* parent = nullptr);

  QString path() const { return path_; }
  void setProblems(std::vector<protocol::Problem> problems);
  const std::vector<protocol::Problem>& problems() const { return problems_; }
  // "" clears it.
  void setInputError(const QString& message);
  QString inputError() const { return inputError_; }

 private:
  void render();

  QString path_;
  std::vector<protocol::Problem> problems_;
  QString inputError_;
};

// Colours shared by every view that shows problems.
inline constexpr const char* kErrorColor = "#c62828";
inline constexpr const char* kWarningColor = "#d84315";

}  // namespace fs::ui

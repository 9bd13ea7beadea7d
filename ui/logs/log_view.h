// LogView: rank log lines and warnings, filterable by rank, level and text.
//
// Appends are queued and shown in one batch at most every 50 ms, so a rank
// printing thousands of lines per second costs one model insert per tick; the
// list keeps following the newest line while the user is at the bottom.
// Warnings and errors are coloured (log_model.h).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "ui/logs/log_model.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListView;
class QTimer;

namespace fs::ui {

class LogView : public QWidget {
  Q_OBJECT
 public:
  explicit LogView(QWidget* parent = nullptr);

  // Shown at the next tick (or flush()).
  void appendLine(LogLine line);
  void appendLines(std::vector<LogLine> lines);
  // Shows what is queued now.
  void flush();
  void clear();

  // The same as the controls do (and the controls follow).
  void setRankFilter(std::optional<int> rank);
  void setLevelShown(LogLevel level, bool shown);
  void setTextFilter(const QString& text);

  int shownCount() const;
  int totalCount() const;
  LogModel* model() const { return model_; }
  LogFilter* filter() const { return filter_; }
  QListView* list() const { return list_; }

 private:
  void addRank(int rank);
  void updateCount();

  LogModel* model_;
  LogFilter* filter_;
  QListView* list_;
  QComboBox* rank_;
  QCheckBox* levels_[3];
  QLineEdit* text_;
  QLabel* count_;
  QTimer* flush_timer_;
  QTimer* text_timer_;
  std::vector<LogLine> pending_;
};

}  // namespace fs::ui

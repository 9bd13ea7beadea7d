// StatsPanel: the statistics of the tensor or subtree selected in the
// inspector: figures (elements, min, max, mean, std, L2 norm, zeros, NaN,
// Inf), a QCustomPlot histogram with linear / log counts, and while a run
// is going its progress with a Cancel button.
//
// It computes nothing: the inspector asks its worker (computeRequested)
// and hands results and progress in. Thread-safety: GUI thread only.
#pragma once

#include <QMap>
#include <QWidget>

#include "app/checkpoints/inspector_results.h"

class QCheckBox;
class QCPBars;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;

namespace fs::ui {

class StatsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StatsPanel(QWidget* parent = nullptr);

  // What is selected now (shown as the title); clears the figures.
  void setTarget(const QString& label, bool enabled);
  void setRunning(bool running);
  void setProgress(quint64 done, quint64 total);
  void setResult(const fs::app::StatsResult& result);
  void setMessage(const QString& text);  // a failure or "cancelled"
  void setLogCounts(bool log);

  // The figures as shown, by name ("elements", "min", "max", "mean", "std",
  // "l2", "zeros", "nan", "inf"); empty before a result.
  QMap<QString, QString> figures() const;
  // The text a figure shows for a value: %.6g for doubles (shared with tests).
  static QString formatFigure(double value);
  QPushButton* computeButton() const { return compute_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }
  QCheckBox* logCountsBox() const { return log_; }
  QCustomPlot* plot() const { return plot_; }
  QLabel* messageLabel() const { return message_; }

 signals:
  void computeRequested();
  void cancelRequested();

 private:
  void replot();

  QLabel* title_;
  QMap<QString, QLabel*> values_;
  QLabel* message_;
  QPushButton* compute_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QCheckBox* log_;
  QCustomPlot* plot_;
  QCPBars* bars_;
  std::optional<fs::tensorfile::Histogram> histogram_;
};

}  // namespace fs::ui

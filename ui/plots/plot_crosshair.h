// PlotCrosshair: a dashed vertical line and a value label on a QCustomPlot,
// on a buffered layer of its own (moving it repaints that layer only). The
// items belong to the plot; CurvePlot owns this object and says where it is
// and what it reads (CurvePlot::valuesAt).
//
// Thread-safety: GUI thread only.
#pragma once

#include <QString>

class QCPItemStraightLine;
class QCPItemText;
class QCPLayer;
class QCustomPlot;

namespace fs::ui {

class PlotCrosshair {
 public:
  // Adds the layer and the items to `plot`, which must outlive this object. Hidden at first.
  explicit PlotCrosshair(QCustomPlot* plot);

  // The line at x (plot coordinates), the label beside the cursor at
  // (pixelX, pixelY), flipped to the cursor's left past the middle of the axis rect.
  void show(double x, double pixelX, double pixelY, const QString& text);
  void hide();
  bool isVisible() const;
  QString text() const;

 private:
  QCustomPlot* plot_;
  QCPLayer* layer_;
  QCPItemStraightLine* line_;
  QCPItemText* label_;
};

}  // namespace fs::ui

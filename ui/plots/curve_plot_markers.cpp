// CurvePlot's markers: vertical lines with a label at their foot (e.g. a rollback), as
// QCustomPlot items that follow the x axis while y spans the whole axis rect.
#include <qcustomplot.h>

#include "ui/plots/curve_plot.h"

namespace fs::ui {

void CurvePlot::setMarkers(std::vector<PlotMarker> markers) {
  for (QCPAbstractItem* item : marker_items_) plot_->removeItem(item);
  marker_items_.clear();
  markers_ = std::move(markers);
  for (const PlotMarker& m : markers_) {
    auto* line = new QCPItemStraightLine(plot_);
    QPen pen(m.color, 1, Qt::DotLine);
    pen.setCosmetic(true);
    line->setPen(pen);
    line->point1->setCoords(m.x, 1);  // two y > 0: valid on a log axis too
    line->point2->setCoords(m.x, 2);
    line->setSelectable(false);
    marker_items_.push_back(line);
    if (m.label.isEmpty()) continue;
    auto* text = new QCPItemText(plot_);
    text->position->setTypeX(QCPItemPosition::ptPlotCoords);
    text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    text->position->setCoords(m.x, 1.0);  // at the bottom: the legend sits at the top
    text->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    text->setPadding(QMargins(3, 2, 3, 2));
    text->setColor(m.color);
    text->setText(m.label);
    text->setClipToAxisRect(true);
    text->setSelectable(false);
    marker_items_.push_back(text);
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace fs::ui

#include "ui/plots/plot_crosshair.h"

#include <qcustomplot.h>

#include <algorithm>

namespace fs::ui {

PlotCrosshair::PlotCrosshair(QCustomPlot* plot) : plot_(plot) {
  plot_->addLayer(QStringLiteral("crosshair"), plot_->layer(QStringLiteral("overlay")),
                  QCustomPlot::limAbove);
  layer_ = plot_->layer(QStringLiteral("crosshair"));
  layer_->setMode(QCPLayer::lmBuffered);
  line_ = new QCPItemStraightLine(plot_);
  line_->setLayer(layer_);
  line_->setPen(QPen(QColor(80, 80, 80), 0, Qt::DashLine));
  line_->setSelectable(false);
  label_ = new QCPItemText(plot_);
  label_->setLayer(layer_);
  label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  label_->setTextAlignment(Qt::AlignLeft);
  label_->setPadding(QMargins(6, 4, 6, 4));
  label_->setBrush(QColor(255, 255, 255, 225));
  label_->setPen(QPen(QColor(160, 160, 160)));
  label_->position->setType(QCPItemPosition::ptAbsolute);
  label_->setSelectable(false);
  line_->setVisible(false);
  label_->setVisible(false);
}

void PlotCrosshair::show(double x, double pixelX, double pixelY, const QString& text) {
  const QRect rect = plot_->axisRect()->rect();
  line_->point1->setCoords(x, 0);
  line_->point2->setCoords(x, 1);
  label_->setText(text);
  // Keep the label inside the plot: flip it to the cursor's left near the right edge.
  const bool left = pixelX > rect.center().x();
  label_->setPositionAlignment((left ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
  label_->position->setCoords(pixelX + (left ? -10 : 10), std::max<double>(pixelY, rect.top()) + 10);
  line_->setVisible(true);
  label_->setVisible(true);
  layer_->replot();
}

void PlotCrosshair::hide() {
  if (!line_->visible()) return;
  line_->setVisible(false);
  label_->setVisible(false);
  layer_->replot();
}

bool PlotCrosshair::isVisible() const {
  return line_->visible();
}

QString PlotCrosshair::text() const {
  return label_->text();
}

}  // namespace fs::ui

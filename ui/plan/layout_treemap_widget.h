// LayoutTreemapWidget: one layout map (app/plan/layout_map.h) painted as a
// treemap of parameter bytes: a colour per FSDP unit, frozen parameters pale
// and hatched, trainable ones saturated, each unit's boundary outlined, units
// that differ from the other side's layout outlined in dashed red, the
// selected unit in blue. Clicking a unit emits its path.
//
// paintMap() is the one painter: the widget, the PNG and the SVG exports all
// draw through it. Only the leaves (parameters) are drawn as rectangles; the
// boundaries, hatching and legend are paths, so an SVG has one <rect> per leaf.
//
// Thread-safety: GUI thread only (paintMap: any thread, with its own painter).
#pragma once

#include <QColor>
#include <QSet>
#include <QWidget>
#include <optional>

#include "app/plan/layout_map.h"

namespace fs::ui {

// The unit's colour: a hue from its path (the same unit has the same colour
// in ours and the reference's), pale for frozen parameters.
QColor unitColour(const QString& path, bool trainable);

class LayoutTreemapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit LayoutTreemapWidget(QWidget* parent = nullptr);

  void setMap(app::LayoutMap map);
  const app::LayoutMap& map() const { return map_; }
  // Paths of the units with a difference from the other side.
  void setMarked(QSet<QString> paths);
  const QSet<QString>& marked() const { return marked_; }
  // The highlighted unit; std::nullopt for none ("" is the root unit).
  void setSelectedPath(std::optional<QString> path);
  // The treemap as last painted, in widget coordinates.
  app::Treemap treemap() const;

  // Title line and treemap into `bounds`; returns the treemap drawn.
  static app::Treemap paintMap(QPainter& painter, const QRectF& bounds, const app::LayoutMap& map,
                               const QSet<QString>& marked, const std::optional<QString>& selected);
  // The legend line (swatches as paths) under the maps.
  static void paintLegend(QPainter& painter, const QRectF& bounds);

  QSize sizeHint() const override { return {420, 360}; }
  QSize minimumSizeHint() const override { return {160, 120}; }

 signals:
  void unitClicked(const QString& path);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  app::LayoutMap map_;
  QSet<QString> marked_;
  std::optional<QString> selected_;
};

}  // namespace fs::ui

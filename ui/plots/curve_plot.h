// CurvePlot: named curves over a shared x axis, every point counted.
//
// Every point counts (min / max band per pixel column), redraws coalesce to one
// ~30 Hz tick, exports write on a pool thread and end with exportFinished().
// See NOTE [Curve plot drawing, redraws and input] in curve_plot.cpp.
// Ownership: owns one CurveSeries (curve_series.h, the data and its buckets)
// and three graphs per curve, the crosshair (plot_crosshair.h); the fit's
// padding is plot_range.h's.
//
// Thread-safety: GUI thread only.
#pragma once

#include <QColor>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ui/plots/axis_format.h"
#include "ui/plots/column_buckets.h"
#include "ui/plots/curve_csv.h"
#include "ui/plots/curve_source.h"
#include "ui/plots/smoothing.h"

class QCPAbstractItem;
class QCPGraph;
class QCustomPlot;
class QTimer;

namespace fs::ui {

class PlotCrosshair;

enum class PlotExportFormat { kPng, kSvg, kPdf, kCsv };

// A vertical line across the plot at x, with a short label at its foot.
struct PlotMarker {
  double x = 0;
  QString label;
  QColor color = QColor(0xb0, 0x20, 0x20);
  bool operator==(const PlotMarker&) const = default;
};

class CurvePlot : public QWidget {
  Q_OBJECT
 public:
  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;

  // ---- curves (drawn in the order added; names are unique)
  // Adding a name that exists replaces its source (and colour when given).
  // An invalid colour picks the next one of the palette.
  void addCurve(const QString& name, CurveSource source, const QColor& color = {});
  void removeCurve(const QString& name);
  void clearCurves();
  QStringList curveNames() const;
  bool hasCurve(const QString& name) const { return find(name) != nullptr; }
  void setCurveVisible(const QString& name, bool visible);
  bool isCurveVisible(const QString& name) const;
  void setLegendVisible(bool visible);
  void setCurveColor(const QString& name, const QColor& color);
  // A dimmed curve is drawn dashed and faint and left out of the legend (e.g. the
  // steps a rollback abandoned).
  void setCurveDimmed(const QString& name, bool dimmed);
  bool isCurveDimmed(const QString& name) const;

  // ---- markers (curve_plot_markers.cpp): replaces every marker.
  void setMarkers(std::vector<PlotMarker> markers);
  const std::vector<PlotMarker>& markers() const { return markers_; }

  // How y values read on the axis and in the crosshair (e.g. AxisFormat::bytes());
  // the default: plain numbers. Tick labels on both axes carry the digits they
  // need to differ (NOTE [Distinct tick labels] in axis_format.cpp).
  void setYFormat(AxisFormat format);

  // ---- axes and smoothing
  // The caller says what x means (step, samples, tokens, wall time, ...).
  void setAxisLabels(const QString& x, const QString& y);
  QString xLabel() const;
  // Log axes skip values <= 0 (they are gaps, not errors).
  void setLogX(bool log);
  void setLogY(bool log);
  bool logX() const { return log_x_; }
  bool logY() const { return log_y_; }
  // Applied to every curve's line before bucketing (the band stays raw);
  // cached per curve, recomputed only when the setting changes.
  void setSmoothing(const Smoothing& smoothing);
  const Smoothing& smoothing() const { return smoothing_; }

  // ---- view
  // Stops following.
  void setXRange(double lower, double upper);
  void setYRange(double lower, double upper);
  // x to all the data, y to what is drawn; starts following again.
  void fitToData();
  bool isFollowing() const { return following_; }
  // Milliseconds between coalesced redraws (default 33).
  void setReplotInterval(int ms);

  // ---- export
  // Writes the plot (PNG / SVG / PDF, at `size`, or the widget's size when
  // empty) or every point of every curve (CSV, raw values, not buckets).
  void exportTo(const QString& path, PlotExportFormat format, QSize size = {});
  // What exportTo writes, built synchronously (for tests and small plots).
  QByteArray render(PlotExportFormat format, QSize size = {});
  std::string csvText() const;
  // By suffix: .png, .svg, .pdf, .csv; false for anything else.
  static bool formatForPath(const QString& path, PlotExportFormat* format);

  // ---- inspection (tests, benchmarks)
  QCustomPlot* customPlot() const { return plot_; }
  QCPGraph* lineGraph(const QString& name) const;
  QCPGraph* bandLowGraph(const QString& name) const;
  QCPGraph* bandHighGraph(const QString& name) const;
  // Takes in pending points and re-buckets now rather than at the next tick.
  void flush();
  // Re-buckets every curve for the current x range and width.
  void rebucket();
  // The crosshair's text at x: the x value, then "name: value" per visible
  // curve (the last drawn value at or before x; with smoothing, also raw).
  QString valuesAt(double x) const;
  // Puts the crosshair at x as if the mouse were there (for tests).
  void showCrosshair(double x);

 public slots:
  // New points may have been appended to any curve.
  void dataGrew();
  // Every source was replaced: read every point again.
  void resetData();

 signals:
  // error is "" when the file was written.
  void exportFinished(const QString& path, const QString& error);
  void followingChanged(bool following);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  struct Curve;

  Curve* find(const QString& name) const;
  void bucketCurve(Curve& curve, const std::vector<double>& edges);
  // Hands the curve's buckets, clamped to the view, to its graphs.
  void drawCurve(Curve& curve);
  void onTick();
  void onXRangeChanged();
  void setFollowing(bool following);
  void fitY();
  void applyScaleTypes();
  void moveCrosshair(double pixel_x, double pixel_y);
  void showContextMenu(const QPoint& pos);
  void exportWithDialog(PlotExportFormat format);
  void applyCurveStyle(Curve& curve);
  // Copies of every curve's raw arrays, for a CSV.
  std::vector<CsvCurve> csvCurves() const;
  std::string csvXHeader() const;

  QCustomPlot* plot_;
  QTimer* tick_;
  std::unique_ptr<PlotCrosshair> crosshair_;  // its items belong to plot_
  std::vector<std::unique_ptr<Curve>> curves_;
  Smoothing smoothing_;
  bool log_x_ = false;
  bool log_y_ = false;
  bool following_ = true;
  int setting_range_ = 0;   // > 0 while the plot itself changes a range
  int bucket_columns_ = 0;  // width the current buckets were made for
  int next_color_ = 0;
  bool stale_while_hidden_ = false;
  AxisFormat y_format_;
  std::vector<PlotMarker> markers_;
  std::vector<QCPAbstractItem*> marker_items_;  // owned by plot_
};

}  // namespace fs::ui

// bucketColumns: one curve reduced to what its pixel columns show.
//
// For each pixel column of the visible x range: the last drawable point of
// the column as the line, and the min / max of every drawable point of the
// column as the band behind it (NOTE [Level of detail] in minmax_pyramid.cpp).
// Every point counts: a single spike among 10M points is its column's max.
// With smoothing, the line follows the smoothed values and the band the raw
// ones, so a spike stays visible however strongly the line is smoothed.
// A column whose points are all gaps (NaN, or <= 0 on a log y axis) breaks
// the line; an empty column does not (the line joins its neighbours, which is
// what sparse data looks like zoomed in).
//
// Thread-safety: pure function over its arguments.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ui/plots/curve_source.h"
#include "ui/plots/minmax_pyramid.h"

namespace fs::ui {

// One entry per drawn point, in increasing x.
struct ColumnBuckets {
  std::vector<double> x;     // x of the column's last drawable line point (last point for a gap)
  std::vector<double> line;  // that point's line value; NaN marks a gap
  std::vector<double> low;   // min of the column's drawable band values; NaN for a gap or none
  std::vector<double> high;  // max of the column's drawable band values; NaN for a gap or none
  // The column's x extent [left, right]; x itself for a neighbour or a gap.
  // The band is drawn as one step per column over this extent, at least a
  // pixel wide: a sloped polygon through one vertex per column would be
  // thinner than a pixel at a one-column spike, and the rasteriser would
  // drop most of it.
  std::vector<double> left;
  std::vector<double> right;

  std::size_t size() const { return x.size(); }
  void clear();
};

struct BucketOptions {
  bool positive_y = false;  // log y axis: values <= 0 are gaps
  bool positive_x = false;  // log x axis: points at x <= 0 are never drawn
  // Also emit the nearest point just outside each side, so the line reaches
  // the plot's edges instead of stopping at the first / last column.
  bool neighbours = true;
};

// What one curve's buckets are made of; each pyramid built from exactly its values.
struct BucketSource {
  std::span<const double> x;
  std::span<const double> line;  // smoothed, or the raw values
  const MinMaxPyramid* line_pyramid = nullptr;
  std::span<const double> band;  // the raw values
  const MinMaxPyramid* band_pyramid = nullptr;
};

// Fills *out for columns [edges[c], edges[c + 1]), the last one closed at
// edges.back(). A column is a gap when none of its line values is drawable.
// REQUIRES: edges.size() >= 2, edges non-decreasing; every span and pyramid
// as long as x.
void bucketColumns(const BucketSource& source, std::span<const double> edges, const BucketOptions& options,
                   ColumnBuckets* out);
// The same with one array for both the line and the band.
void bucketColumns(CurveSpans data, const MinMaxPyramid& pyramid, std::span<const double> edges,
                   const BucketOptions& options, ColumnBuckets* out);

// x edges of `columns` equal columns between lo and hi, linear or logarithmic
// (what a QCustomPlot axis maps pixels to). REQUIRES: columns >= 1; for log, 0 < lo.
std::vector<double> columnEdges(double lo, double hi, int columns, bool logarithmic);

}  // namespace fs::ui

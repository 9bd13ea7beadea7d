#include "ui/plots/view_clip.h"

#include <algorithm>
#include <cmath>

namespace fs::ui {
namespace {

struct Axis {
  bool log;
  double lower, upper;  // the grown box, in axis space
  double to(double v) const { return log ? std::log10(v) : v; }
  double from(double t) const { return log ? std::pow(10.0, t) : t; }
};

Axis grownAxis(double lower, double upper, bool log) {
  Axis a{log, 0, 0};
  const double lo = a.to(lower), hi = a.to(upper);
  const double size = std::max(hi - lo, 1e-300);
  a.lower = lo - size;
  a.upper = hi + size;
  return a;
}

// A vertex in axis space that remembers its exact data values when unmoved.
struct Vertex {
  double tx, ty;
  double x, y;
};

}  // namespace

void clampToView(std::span<const double> x, std::span<const double> y, const ViewBox& view, Polyline* out) {
  out->x.clear();
  out->y.clear();
  const Axis ax = grownAxis(view.x_lower, view.x_upper, view.log_x);
  const Axis ay = grownAxis(view.y_lower, view.y_upper, view.log_y);

  // 1. x: cut the segments that cross the box's left / right side, drop what lies beyond.
  std::vector<Vertex> v;
  v.reserve(x.size() + 4);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Vertex cur{ax.to(x[i]), std::isnan(y[i]) ? y[i] : ay.to(y[i]), x[i], y[i]};
    const bool has_prev = i > 0;
    const Vertex prev = has_prev ? Vertex{ax.to(x[i - 1]), std::isnan(y[i - 1]) ? y[i - 1] : ay.to(y[i - 1]),
                                          x[i - 1], y[i - 1]}
                                 : cur;
    for (const double side : {ax.lower, ax.upper}) {
      // Crossing the side between prev and cur (either direction): add the crossing.
      if (has_prev && ((prev.tx < side && cur.tx > side) || (prev.tx > side && cur.tx < side))) {
        const double t = (side - prev.tx) / (cur.tx - prev.tx);
        const double ty =
            std::isnan(prev.ty) || std::isnan(cur.ty) ? std::nan("") : prev.ty + t * (cur.ty - prev.ty);
        v.push_back({side, ty, ax.from(side), std::isnan(ty) ? ty : ay.from(ty)});
      }
    }
    if (cur.tx >= ax.lower && cur.tx <= ax.upper) v.push_back(cur);
  }

  // 2. y: add a vertex where a segment crosses the top or bottom, then clamp.
  auto emitVertex = [&](const Vertex& p) {
    if (std::isnan(p.ty)) {
      out->x.push_back(p.x);
      out->y.push_back(p.y);
      return;
    }
    const double ty = std::clamp(p.ty, ay.lower, ay.upper);
    out->x.push_back(p.x);
    out->y.push_back(ty == p.ty ? p.y : ay.from(ty));
  };
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0 && !std::isnan(v[i - 1].ty) && !std::isnan(v[i].ty)) {
      const Vertex& a = v[i - 1];
      const Vertex& b = v[i];
      double cross[2];
      int n = 0;
      for (const double side : {ay.lower, ay.upper})
        if ((a.ty < side && b.ty > side) || (a.ty > side && b.ty < side))
          cross[n++] = (side - a.ty) / (b.ty - a.ty);
      if (n == 2 && cross[0] > cross[1]) std::swap(cross[0], cross[1]);
      for (int k = 0; k < n; ++k) {
        const double tx = a.tx + cross[k] * (b.tx - a.tx);
        const double ty = a.ty + cross[k] * (b.ty - a.ty);
        emitVertex({tx, ty, ax.from(tx), ay.from(ty)});
      }
    }
    emitVertex(v[i]);
  }
}

}  // namespace fs::ui

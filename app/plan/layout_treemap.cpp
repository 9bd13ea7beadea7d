// The treemap half of layout_map.h: squarify() and the two-level layout of a map.
#include <algorithm>
#include <numeric>

#include "app/plan/layout_map.h"

namespace fs::app {
namespace {

// The worst aspect ratio of a row of areas summing to `sum` laid along `side`.
double worstRatio(double sum, double largest, double smallest, double side) {
  if (sum <= 0 || smallest <= 0) return 1e300;
  const double s2 = side * side, sum2 = sum * sum;
  return std::max(s2 * largest / sum2, sum2 / (s2 * smallest));
}

}  // namespace

std::vector<QRectF> squarify(const std::vector<double>& weights, const QRectF& bounds) {
  std::vector<QRectF> out(weights.size(), QRectF(bounds.topLeft(), QSizeF(0, 0)));
  std::vector<size_t> order;
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0) {
      order.push_back(i);
      total += weights[i];
    }
  }
  if (total <= 0 || bounds.width() <= 0 || bounds.height() <= 0) return out;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  const double scale = bounds.width() * bounds.height() / total;
  QRectF rest = bounds;
  size_t i = 0;
  while (i < order.size()) {
    const bool vertical = rest.width() >= rest.height();  // the row is a column at the left
    const double side = vertical ? rest.height() : rest.width();
    double sum = weights[order[i]] * scale;
    double largest = sum, smallest = sum;
    double best = worstRatio(sum, largest, smallest, side);
    size_t j = i + 1;
    for (; j < order.size(); ++j) {
      const double a = weights[order[j]] * scale;
      const double ratio = worstRatio(sum + a, std::max(largest, a), std::min(smallest, a), side);
      if (ratio > best) break;
      sum += a;
      largest = std::max(largest, a);
      smallest = std::min(smallest, a);
      best = ratio;
    }
    const bool last = j == order.size();
    // The row's thickness; the last row takes what is left exactly (no rounding gap).
    double thick = sum / side;
    if (last) thick = vertical ? rest.width() : rest.height();
    double along = vertical ? rest.top() : rest.left();
    for (size_t k = i; k < j; ++k) {
      const double a = weights[order[k]] * scale;
      double len = a / thick;
      const double end = vertical ? rest.bottom() : rest.right();
      if (k + 1 == j || along + len > end) len = end - along;  // the row's last item closes it
      out[order[k]] =
          vertical ? QRectF(rest.left(), along, thick, len) : QRectF(along, rest.top(), len, thick);
      along += len;
    }
    if (vertical) {
      rest.setLeft(std::min(rest.right(), rest.left() + thick));
    } else {
      rest.setTop(std::min(rest.bottom(), rest.top() + thick));
    }
    i = j;
  }
  return out;
}

Treemap layoutTreemap(const LayoutMap& map, const QRectF& bounds, double inset) {
  Treemap t;
  std::vector<double> unitWeights;
  for (const auto& u : map.units) unitWeights.push_back(static_cast<double>(u.bytes()));
  t.units = squarify(unitWeights, bounds);
  for (size_t u = 0; u < map.units.size(); ++u) {
    const QRectF& r = t.units[u];
    QRectF inner = r.adjusted(inset, inset, -inset, -inset);
    if (inner.width() <= 0 || inner.height() <= 0) inner = r;  // too small for a border
    std::vector<double> w;
    for (const auto& p : map.units[u].params) w.push_back(static_cast<double>(p.bytes));
    const auto leaves = squarify(w, inner);
    for (size_t p = 0; p < leaves.size(); ++p) {
      if (leaves[p].isEmpty()) continue;
      t.leaves.push_back({static_cast<int>(u), static_cast<int>(p), leaves[p]});
    }
  }
  return t;
}

int unitAt(const Treemap& treemap, const QPointF& point) {
  for (size_t u = 0; u < treemap.units.size(); ++u) {
    if (!treemap.units[u].isEmpty() && treemap.units[u].contains(point)) return static_cast<int>(u);
  }
  return -1;
}

int leafAt(const Treemap& treemap, const QPointF& point) {
  for (size_t l = 0; l < treemap.leaves.size(); ++l) {
    if (treemap.leaves[l].rect.contains(point)) return static_cast<int>(l);
  }
  return -1;
}

}  // namespace fs::app

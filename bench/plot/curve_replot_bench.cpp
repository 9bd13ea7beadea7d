// bench_curve_replot: redraw cost of a 10M-point curve in a CurvePlot.
//
// A random walk of N points (default 10M) with rare spikes, drawn in an
// offscreen 1600x500 plot. Measures, over R zoom ranges (default 100: the
// full range, then random widths from 100 points to everything, log-uniform),
// the time of one zoom = re-bucket (setXRange) + QCustomPlot replot, and of
// the re-bucket alone; then the time of one coalesced tick while following a
// growing curve (append 10k points, take them in, fit, re-bucket, replot).
// Prints median / p90 / max in ms. Target: median zoom < 16 ms.
//
// Usage: bench_curve_replot [points] [ranges] [seed]
#include <qcustomplot.h>

#include <QApplication>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ui/plots/curve_plot.h"

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, std::size_t(q * double(ms.size() - 1) + 0.5))];
  };
  std::printf("%-34s n=%-4zu median %7.2f ms   p90 %7.2f ms   max %7.2f ms\n", what, ms.size(), at(0.5),
              at(0.9), ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const std::size_t points = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const int ranges = argc > 2 ? std::atoi(argv[2]) : 100;
  const unsigned seed = argc > 3 ? unsigned(std::atoi(argv[3])) : 1;
  constexpr std::size_t kGrowBy = 10'000;
  constexpr int kGrowTicks = 30;

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> step(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> x, y;
  x.reserve(points + kGrowBy * kGrowTicks);  // no reallocation while following
  y.reserve(points + kGrowBy * kGrowTicks);
  double walk = 0;
  auto append = [&] {
    walk += step(rng);
    x.push_back(double(x.size() + 1));
    y.push_back(u(rng) < 1e-5 ? walk + (u(rng) < 0.5 ? -50 : 50) * std::sqrt(double(x.size())) : walk);
  };
  for (std::size_t i = 0; i < points; ++i) append();

  fs::ui::CurvePlot plot;
  plot.resize(1600, 500);
  plot.setAxisLabels(QStringLiteral("step"), QStringLiteral("loss"));
  plot.show();
  QApplication::processEvents();
  QCustomPlot* cp = plot.customPlot();

  plot.addCurve(QStringLiteral("walk"), [&] { return fs::ui::CurveSpans{x, y}; });
  auto start = Clock::now();
  plot.flush();  // builds the smoothing-free pyramid over all points once
  const double build_ms = msSince(start);
  cp->replot(QCustomPlot::rpImmediateRefresh);
  QApplication::processEvents();
  std::printf("bench_curve_replot: %zu points, plot %dx%d (axis rect %d px wide), %d zoom ranges, seed %u\n",
              points, cp->width(), cp->height(), cp->axisRect()->width(), ranges, seed);
  std::printf("%-34s %.1f ms (%.1f ns/point)\n", "initial take-in (pyramid build)", build_ms,
              build_ms * 1e6 / double(points));

  const double x0 = x.front(), x1 = x.back();
  std::vector<std::pair<double, double>> views{{x0, x1}};
  while (int(views.size()) < ranges) {
    const double width = std::exp(std::log(100.0) + u(rng) * (std::log(x1 - x0) - std::log(100.0)));
    const double lo = x0 + u(rng) * (x1 - x0 - width);
    views.emplace_back(lo, lo + width);
  }

  std::vector<double> zoom_ms, bucket_ms;
  for (const auto& [lo, hi] : views) {
    start = Clock::now();
    plot.setXRange(lo, hi);  // re-buckets at once
    const double bucketed = msSince(start);
    cp->replot(QCustomPlot::rpImmediateRefresh);
    zoom_ms.push_back(msSince(start));
    bucket_ms.push_back(bucketed);
    QApplication::processEvents();  // outside the timing: the queued repaint
  }
  report("zoom: re-bucket + replot", zoom_ms);
  report("zoom: re-bucket only", bucket_ms);

  // Following a live run: each tick takes in 10k new points, refits and redraws.
  plot.fitToData();
  std::vector<double> tick_ms, take_in_ms;
  for (int t = 0; t < kGrowTicks; ++t) {
    for (std::size_t i = 0; i < kGrowBy; ++i) append();
    plot.dataGrew();
    start = Clock::now();
    plot.flush();
    take_in_ms.push_back(msSince(start));
    cp->replot(QCustomPlot::rpImmediateRefresh);
    tick_ms.push_back(msSince(start));
    QApplication::processEvents();
  }
  report("follow: +10k points, fit + replot", tick_ms);
  report("follow: take in + fit + re-bucket", take_in_ms);
  return 0;
}

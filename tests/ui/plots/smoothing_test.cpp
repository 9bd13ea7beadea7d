// Smoothing against closed forms: TensorBoard's debiased EMA (by hand and as a
// weighted sum), the time-weighted EMA over irregular x, the running mean;
// appending in pieces gives the same values as smoothing everything at once.
#include "ui/plots/smoothing.h"

#include <QtTest>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace fs::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> smoothAll(const Smoothing& s, const std::vector<double>& x,
                              const std::vector<double>& y) {
  Smoother smoother;
  smoother.setSmoothing(s);
  const auto out = smoother.update({x, y});
  return {out.begin(), out.end()};
}

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

std::vector<double> iota(std::size_t n) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = double(i);
  return x;
}

}  // namespace

class SmoothingTest : public QObject {
  Q_OBJECT
 private slots:
  void emaByHand() {
    // w = 0.6 over 1, 2, 3, NaN, 4:
    //   s1 = 0.4 * 1             = 0.4     debias 1 - 0.6   = 0.4    -> 1
    //   s2 = 0.6 * 0.4 + 0.4 * 2 = 1.04    debias 1 - 0.36  = 0.64   -> 1.625
    //   s3 = 0.6 * 1.04 + 0.4 * 3 = 1.824  debias 1 - 0.216 = 0.784  -> 2.32653...
    //   NaN stays a gap and does not count
    //   s4 = 0.6 * 1.824 + 0.4 * 4 = 2.6944 debias 1 - 0.1296 = 0.8704 -> 3.09559...
    const std::vector<double> y{1, 2, 3, kNaN, 4};
    const auto out = smoothAll({SmoothingKind::kEma, 0.6}, iota(5), y);
    QVERIFY(close(out[0], 1.0));
    QVERIFY(close(out[1], 1.625));
    QVERIFY(close(out[2], 1.824 / 0.784));
    QVERIFY(std::isnan(out[3]));
    QVERIFY(close(out[4], 2.6944 / 0.8704));
  }

  void emaIsADebiasedWeightedSum() {
    // v_k = sum_i (1 - w) w^(k - i) y_i / (1 - w^k), over the k finite values so far.
    std::mt19937_64 rng(1);
    std::normal_distribution<double> n(0, 1);
    std::vector<double> y(300);
    for (auto& v : y) v = n(rng);
    const double w = 0.9;
    const auto out = smoothAll({SmoothingKind::kEma, w}, iota(y.size()), y);
    for (std::size_t k = 1; k <= y.size(); ++k) {
      double sum = 0;
      for (std::size_t i = 1; i <= k; ++i) sum += (1 - w) * std::pow(w, double(k - i)) * y[i - 1];
      QVERIFY2(close(out[k - 1], sum / (1 - std::pow(w, double(k)))), qPrintable(QString::number(k)));
    }
  }

  void timeEmaWeighsByDistanceInX() {
    // v_n = sum_i 2^-((x_n - x_i) / h) y_i / sum_i 2^-((x_n - x_i) / h)
    const std::vector<double> x{0, 0, 1, 5, 5.5, 20, 21};
    const std::vector<double> y{4, 2, kNaN, 8, -1, 3, 10};
    const double h = 2.5;
    const auto out = smoothAll({SmoothingKind::kTimeEma, h}, x, y);
    for (std::size_t n = 0; n < x.size(); ++n) {
      if (std::isnan(y[n])) {
        QVERIFY(std::isnan(out[n]));
        continue;
      }
      double num = 0, den = 0;
      for (std::size_t i = 0; i <= n; ++i) {
        if (std::isnan(y[i])) continue;
        const double w = std::exp2(-(x[n] - x[i]) / h);
        num += w * y[i];
        den += w;
      }
      QVERIFY2(close(out[n], num / den), qPrintable(QString::number(n)));
    }
    QVERIFY(close(out[1], 3.0));  // two points at the same x weigh the same
  }

  void runningMeanOfTheLastWindowPoints() {
    std::mt19937_64 rng(2);
    std::uniform_real_distribution<double> u(-5, 5);
    std::vector<double> y(500);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = i % 17 == 3 ? kNaN : u(rng);
    y[200] = 1e30;  // a spike leaves the window without wiping out the small values
    const std::size_t window = 7;
    const auto out = smoothAll({SmoothingKind::kRunningMean, double(window)}, iota(y.size()), y);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(y[i])) {
        QVERIFY(std::isnan(out[i]));
        continue;
      }
      double sum = 0;
      int count = 0;
      for (std::size_t k = i + 1 > window ? i + 1 - window : 0; k <= i; ++k)
        if (!std::isnan(y[k])) sum += y[k], ++count;
      QVERIFY2(std::fabs(out[i] - sum / count) <= 1e-9 * std::max(1.0, std::fabs(sum / count)),
               qPrintable(QStringLiteral("%1: %2 vs %3").arg(i).arg(out[i]).arg(sum / count)));
    }
  }

  void appendingInPiecesEqualsAllAtOnce() {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> x, y;
    double t = 0;
    for (int i = 0; i < 2000; ++i) {
      t += u(rng) * 2;
      x.push_back(t);
      y.push_back(u(rng) < 0.05 ? kNaN : u(rng) * 10);
    }
    for (const Smoothing& s : {Smoothing{SmoothingKind::kEma, 0.95}, Smoothing{SmoothingKind::kTimeEma, 7.5},
                               Smoothing{SmoothingKind::kRunningMean, 50}}) {
      const auto whole = smoothAll(s, x, y);
      Smoother pieces;
      pieces.setSmoothing(s);
      std::size_t n = 0;
      for (std::size_t step = 1; n < x.size(); step = step * 3 + 1) {
        n = std::min(x.size(), n + step);
        pieces.update({std::span<const double>(x).first(n), std::span<const double>(y).first(n)});
      }
      const auto got = pieces.update({x, y});
      QCOMPARE(got.size(), whole.size());
      for (std::size_t i = 0; i < whole.size(); ++i) QVERIFY(close(got[i], whole[i]));
    }
  }

  void inactiveSettingsReturnTheRawValues() {
    const std::vector<double> x{1, 2, 3}, y{3, 1, 2};
    for (const Smoothing& s :
         {Smoothing{}, Smoothing{SmoothingKind::kEma, 0}, Smoothing{SmoothingKind::kRunningMean, 1},
          Smoothing{SmoothingKind::kTimeEma, 0}}) {
      QVERIFY(!s.active());
      Smoother smoother;
      smoother.setSmoothing(s);
      QCOMPARE(smoother.update({x, y}).data(), y.data());  // no copy
    }
  }

  void aNewSettingRecomputesFromTheStart() {
    const std::vector<double> x = iota(4), y{1, 2, 3, 4};
    Smoother smoother;
    smoother.setSmoothing({SmoothingKind::kRunningMean, 2});
    smoother.update({x, y});
    smoother.setSmoothing({SmoothingKind::kRunningMean, 4});
    const auto out = smoother.update({x, y});
    QVERIFY(close(out[3], 2.5));
  }
};

}  // namespace fs::ui

QTEST_APPLESS_MAIN(fs::ui::SmoothingTest)
#include "smoothing_test.moc"

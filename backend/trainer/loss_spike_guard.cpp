#include "backend/trainer/loss_spike_guard.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fs::trainer {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}

}  // namespace

std::optional<std::string> spikeReason(const protocol::GuardConfig& config, const std::string& dataset,
                                       const std::vector<double>& window, double loss) {
  if (window.empty() || !std::isfinite(loss)) return std::nullopt;
  if (config.rule == "ema") {
    double ema = window.front();
    for (size_t i = 1; i < window.size(); ++i)
      ema = config.ema_beta * ema + (1 - config.ema_beta) * window[i];
    if (!(ema > 0) || loss / ema <= config.threshold) return std::nullopt;
    return dataset + " loss " + fmt(loss) + " is " + fmt(loss / ema) + " x its EMA " + fmt(ema) +
           " over the last " + std::to_string(window.size()) + " steps (threshold " + fmt(config.threshold) +
           ")";
  }
  const double m = median(window);
  std::vector<double> dev;
  for (double x : window) dev.push_back(std::abs(x - m));
  // A flat window (MAD 0) would call any rise a spike: the MAD is at least 1e-6 of the median.
  const double mad = std::max(median(dev), 1e-6 * std::abs(m) + 1e-12);
  const double z = (loss - m) / (1.4826 * mad);
  if (z <= config.threshold) return std::nullopt;
  return dataset + " loss " + fmt(loss) + " is " + fmt(z) + " MADs above the median " + fmt(m) +
         " of the last " + std::to_string(window.size()) + " steps (threshold " + fmt(config.threshold) + ")";
}

std::optional<SpikeVerdict> LossSpikeGuard::observe(int64_t step,
                                                    const std::map<std::string, double>& losses) {
  if (!config_.enabled) return std::nullopt;
  for (const auto& [name, loss] : losses) {
    const auto& h = history_[name];
    if (static_cast<int64_t>(h.size()) < config_.window) continue;
    std::vector<double> window;
    for (auto it = h.end() - config_.window; it != h.end(); ++it) window.push_back(it->second);
    if (auto reason = spikeReason(config_, name, window, loss)) {
      window.push_back(loss);
      return SpikeVerdict{name, *reason, window};
    }
  }
  for (const auto& [name, loss] : losses) {
    if (!std::isfinite(loss)) continue;
    auto& h = history_[name];
    h.emplace_back(step, loss);
    while (static_cast<int64_t>(h.size()) > keep_) h.pop_front();
  }
  return std::nullopt;
}

void LossSpikeGuard::rewindTo(int64_t step) {
  // The history as it stood when `step` was done: the run goes on from there.
  for (auto& [name, h] : history_) {
    while (!h.empty() && h.back().first > step) h.pop_back();
  }
  ++rollbacks_;
}

}  // namespace fs::trainer

// Shared by the monitor benchmarks: a realistic step event, as the engine writes it.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/protocol/wire/events.h"

namespace fs::bench {

// Step `step` of a run with two datasets (laion, mmc4), four gated cross-attention
// layers and one rank: every field the engine fills on CPU.
inline protocol::StepEvent realisticStep(std::int64_t step) {
  protocol::StepEvent s;
  s.step = step;
  s.epoch = static_cast<int>(step / 100000);
  s.samples = {{"laion", step * 64}, {"mmc4", step * 32}};
  s.tokens = {{"laion", step * 64 * 32}, {"mmc4", step * 32 * 256}};
  const double decay = 2.0 + 3.0 * std::exp(-static_cast<double>(step) / 20000.0);
  s.loss = {{"laion", decay + 0.013 * std::sin(step * 0.7)},
            {"mmc4", decay * 0.8 + 0.011 * std::cos(step * 0.3)}};
  s.rank_loss = {{"laion", {s.loss["laion"]}}, {"mmc4", {s.loss["mmc4"]}}};
  s.lr = 1e-4 * std::min(1.0, static_cast<double>(step) / 5000.0);
  s.grad_norm = 0.5 + 0.25 * std::sin(step * 0.01);
  s.step_time_s = 1.25 + 0.01 * (step % 7);
  s.data_time_s = 0.0625 + 0.001 * (step % 5);
  s.samples_per_s = {{"laion", 51.2 + (step % 3)}, {"mmc4", 25.6 + (step % 2)}};
  for (int layer = 0; layer < 4; ++layer) {
    const double g = std::tanh(1e-5 * static_cast<double>(step) * (layer + 1));
    s.gates.push_back({layer * 4, g, g * 0.5});
  }
  return s;
}

}  // namespace fs::bench

// What one training iteration produced: the loop sums it over an
// accumulation window; the RankReporter reports the window.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fs::trainer {

struct StepResult {
  std::map<std::string, double> loss;  // per dataset (the unscaled loss)
  std::map<std::string, int64_t> samples, tokens;
  std::map<std::string, double> localLoss;  // this rank's own (equal to loss with one rank)
  double waitS = 0;  // time spent waiting on other ranks (agreements, gradient reduction)
  bool skipped = false;
  std::string skipReason;
  std::optional<double> gradNorm;  // set when the optimizer stepped
  bool optimizerStepped = false;
  std::optional<double> lossScale;  // loss scaling: the scale of this window's backward passes
};

}  // namespace fs::trainer

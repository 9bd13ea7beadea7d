// Progress: what TrainerOptions::onProgress receives after each optimizer step
// on every rank (the CLI's progress line, benchmarks); the RankReporter fills it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fs::trainer {

struct Progress {
  int64_t step = 0;        // optimizer steps done
  int64_t totalSteps = 0;  // optimizer steps in the run
  int64_t epoch = 0;
  std::map<std::string, double> loss;  // per dataset
  double lr = 0;
  double stepTimeS = 0;
  double samplesPerS = 0;
};

}  // namespace fs::trainer

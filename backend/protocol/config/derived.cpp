#include "backend/protocol/config/derived.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

// Appends one printf-formatted line (at most 255 characters) to `s`; the format is checked at each call.
[[gnu::format(printf, 2, 3)]] void appendLine(std::string& s, const char* fmt, ...) {
  char buf[256];
  std::va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  s += buf;
  s += '\n';
}
int64_t ceilDiv(int64_t a, int64_t b) {
  return b <= 0 ? 0 : (a + b - 1) / b;
}
}  // namespace

bool deviceGroupIsNccl(const ParallelConfig& parallel) {
  if (parallel.dist_backend == "auto" || parallel.dist_backend.empty()) return parallel.device == "cuda";
  return parallel.dist_backend == "nccl";
}

int64_t resolvedMaxTokens(const DatasetConfig& d) {
  if (d.max_tokens > 0) return d.max_tokens;
  return d.type == "mmc4" ? 256 : 32;
}

DerivedFigures deriveFigures(const RunConfig& c) {
  DerivedFigures f;
  f.worldSize = std::max<int64_t>(1, c.worldSize());
  const int64_t accum = std::max<int64_t>(1, c.optim.grad_accum_steps);
  int64_t steps = -1;
  for (const auto& d : c.data.datasets) {
    DatasetFigures df;
    df.name = d.name;
    df.type = d.type;
    df.maxTokens = resolvedMaxTokens(d);
    df.globalBatch = std::max<int64_t>(1, d.batch_size) * f.worldSize;
    df.samplesPerOptimizerStep = df.globalBatch * accum;
    const int64_t workers = std::max<int64_t>(1, d.workers);
    df.batchesPerEpoch = ceilDiv(ceilDiv(d.samples_per_epoch, df.globalBatch), workers) * workers;
    df.samplesPerEpoch = df.batchesPerEpoch * df.globalBatch;
    df.samplesTotal = df.samplesPerEpoch * c.optim.epochs;
    if (c.data.source == "shards" && !d.shards.empty()) {
      if (auto n = countShards(d.shards)) df.shardCount = n.value();
    }
    if (d.total_samples > 0)
      df.passes = static_cast<double>(df.samplesTotal) / static_cast<double>(d.total_samples);
    steps = steps < 0 ? df.batchesPerEpoch : std::min(steps, df.batchesPerEpoch);
    f.datasets.push_back(df);
  }
  f.stepsPerEpoch = std::max<int64_t>(0, steps);
  f.optimizerStepsPerEpoch = ceilDiv(f.stepsPerEpoch, accum);
  f.totalSteps = f.stepsPerEpoch * c.optim.epochs;
  f.totalOptimizerSteps = f.optimizerStepsPerEpoch * c.optim.epochs;
  if (c.compat == "openflamingo") {
    // The reference: (samples_mmc4 // (batch_mmc4 * world)) * epochs, ignoring accumulation.
    const DatasetConfig* ref = c.data.datasets.empty() ? nullptr : &c.data.datasets.front();
    for (const auto& d : c.data.datasets) {
      if (d.type == "mmc4") {
        ref = &d;
        break;
      }
    }
    f.schedulerSteps =
        ref ? (ref->samples_per_epoch / (std::max<int64_t>(1, ref->batch_size) * f.worldSize)) *
                  c.optim.epochs
            : 0;
  } else {
    f.schedulerSteps = f.totalOptimizerSteps;
  }
  f.checkpointEverySteps = c.checkpoint.every_steps;
  f.checkpointsPerEpoch = c.checkpoint.every_steps > 0 ? f.stepsPerEpoch / c.checkpoint.every_steps : 0;
  return f;
}

std::string formatFigures(const DerivedFigures& f) {
  std::string s;
  appendLine(s, "world size:                 %lld ranks", static_cast<long long>(f.worldSize));
  appendLine(s, "steps per epoch:            %lld (optimizer steps: %lld)",
             static_cast<long long>(f.stepsPerEpoch), static_cast<long long>(f.optimizerStepsPerEpoch));
  appendLine(s, "total steps:                %lld (optimizer steps: %lld)",
             static_cast<long long>(f.totalSteps), static_cast<long long>(f.totalOptimizerSteps));
  appendLine(s, "lr schedule length:         %lld optimizer steps", static_cast<long long>(f.schedulerSteps));
  if (f.checkpointEverySteps > 0) {
    appendLine(s, "checkpoints:                every %lld steps (%lld per epoch) and at each epoch end",
               static_cast<long long>(f.checkpointEverySteps), static_cast<long long>(f.checkpointsPerEpoch));
  } else {
    appendLine(s, "checkpoints:                at each epoch end only");
  }
  for (const auto& d : f.datasets) {
    appendLine(s, "dataset %s (%s):", d.name.c_str(), d.type.c_str());
    appendLine(s, "  global batch:             %lld samples (%lld per optimizer step)",
               static_cast<long long>(d.globalBatch), static_cast<long long>(d.samplesPerOptimizerStep));
    appendLine(s, "  batches per epoch:        %lld (%lld samples drawn per epoch)",
               static_cast<long long>(d.batchesPerEpoch), static_cast<long long>(d.samplesPerEpoch));
    appendLine(s, "  samples over the run:     %lld", static_cast<long long>(d.samplesTotal));
    appendLine(s, "  tokens per sample:        %lld", static_cast<long long>(d.maxTokens));
    if (d.shardCount)
      appendLine(s, "  shards:                   %llu", static_cast<unsigned long long>(*d.shardCount));
    if (d.passes) {
      appendLine(s, "  passes over the data:     %.3f", *d.passes);
    } else {
      appendLine(s, "  passes over the data:     unknown (set total_samples to see it)");
    }
  }
  return s;
}

}  // namespace fs::protocol

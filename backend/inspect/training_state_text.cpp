// training_state.h's words: the data position sentence and the report
// `flamingo-train checkpoint state` prints.
#include <cstdio>
#include <sstream>

#include "backend/inspect/training_state.h"

namespace fs::inspect {
namespace {

// 3400 -> "3,400"
std::string grouped(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string list(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + num(v[i]);
  return out + "]";
}

std::string opt(const std::optional<double>& v) {
  return v ? num(*v) : "-";
}

}  // namespace

std::string describeDataPosition(const DataPositionInfo& p) {
  std::ostringstream out;
  const bool cursors = !p.cursors.empty() && p.cursors.size() == p.datasets.size();
  out << "epoch " << p.epoch << ": ";
  for (std::size_t i = 0; i < p.datasets.size(); ++i) {
    const std::int64_t batches = p.batchesConsumed[i];
    out << (i ? (cursors ? "; " : ", ") : "") << p.datasets[i] << ' ';
    if (cursors) {
      const protocol::ShardCursorRecord& c = p.cursors[i];
      out << "at shard " << c.shard << " (index " << grouped(c.shardIndex) << " of " << grouped(c.shardCount)
          << ", pass " << c.pass << ", worker " << c.worker << ") with " << grouped(c.samplesRead)
          << (c.samplesRead == 1 ? " sample" : " samples") << " read from it, ";
    }
    out << grouped(batches) << (batches == 1 ? " batch" : " batches");
    if (i < p.batchSizes.size()) {
      const std::int64_t samples = batches * p.batchSizes[i];
      out << " of " << grouped(p.batchSizes[i]) << " = " << grouped(samples) << " samples";
      if (cursors) out << " this epoch";
      if (p.world > 1) out << " per rank (" << grouped(samples * p.world) << " over " << p.world << " ranks)";
    } else if (cursors) {
      out << " this epoch";
    }
  }
  if (p.datasets.empty()) out << "no datasets";
  out << (cursors ? "; " : ", ") << "on rank " << p.rank << " of " << p.world << " (" << p.source
      << " source";
  if (p.batchSizes.empty()) out << "; batch sizes not recorded";
  if (p.rngState.data.size() > 0) out << "; " << p.rngState.data.size() << " bytes of source RNG state";
  out << ')';
  return out.str();
}

std::string formatTrainingState(const TrainingState& s, std::size_t max_params) {
  std::ostringstream out;
  out << s.path << " (" << formatName(s.format) << ")\n";
  if (s.resume) {
    const ResumeInfo& r = *s.resume;
    out << "training: " << r.kind << " checkpoint at optimizer step " << r.step << ", iteration "
        << r.iteration << ", epoch " << r.epoch << "\n";
  } else if (s.epoch) {
    out << "training: epoch " << *s.epoch << " (the top-level \"epoch\")\n";
  }
  if (s.resume && s.resume->data) out << "data position: " << describeDataPosition(*s.resume->data) << "\n";
  if (s.resume) {
    out << "RNG state:";
    if (s.resume->rng.empty()) out << " none";
    out << "\n";
    for (const auto& g : s.resume->rng)
      out << "  " << g.name << ": " << g.bytes << " bytes, " << g.hash << "\n";
  }
  if (s.scheduler) {
    const SchedulerState& c = *s.scheduler;
    out << "LR scheduler: last_epoch " << (c.lastEpoch ? std::to_string(*c.lastEpoch) : "-")
        << ", _step_count " << (c.stepCount ? std::to_string(*c.stepCount) : "-") << ", base_lrs "
        << list(c.baseLrs) << ", _last_lr " << list(c.lastLr) << "\n";
  }
  if (s.optimizer) {
    const OptimizerState& o = *s.optimizer;
    out << "optimizer: " << o.groups.size() << " param groups, state for " << o.params.size()
        << " parameters";
    out << (o.nameSource.empty() ? " (names unknown: ids only)" : " (names from " + o.nameSource + ")")
        << "\n";
    for (const auto& g : o.groups) {
      out << "  group " << g.index << ": " << g.params << " params, lr " << num(g.lr) << ", weight_decay "
          << num(g.weightDecay) << ", betas (" << num(g.beta1) << ", " << num(g.beta2) << "), eps "
          << num(g.eps);
      if (g.initialLr) out << ", initial_lr " << num(*g.initialLr);
      out << "\n";
    }
    std::size_t shown = 0;
    for (const auto& p : o.params) {
      if (max_params > 0 && shown == max_params) {
        out << "  ... and " << o.params.size() - shown << " more\n";
        break;
      }
      ++shown;
      out << "  " << p.id << " " << (p.name.empty() ? "?" : p.name) << "  group "
          << (p.group ? std::to_string(*p.group) : "-") << "  step " << opt(p.step) << "  |exp_avg| "
          << opt(p.expAvgNorm) << "  |exp_avg_sq| " << opt(p.expAvgSqNorm) << "\n";
    }
  }
  for (const auto& a : s.absent) out << a << "\n";
  return out.str();
}

}  // namespace fs::inspect

// LossSpikeGuard: the guard's bookkeeping and verdict (guard: in the config). The Trainer owns one and
// feeds it every optimizer step's per-dataset losses; the rollback itself is the Trainer's
// (trainer_guard.cpp). Thread-safety: the rank's training thread.
//
// NOTE [Loss-spike guard]
// After each optimizer step the guard looks at each dataset's step loss (the window's mean of the
// globally reduced loss, the figure of the step event). With `window` earlier steps on record it
// compares the new loss with them: rule mad: z = (loss - median) / (1.4826 x MAD), a spike when
// z > threshold; rule ema: the EMA over the window (oldest first, decay ema_beta), a spike when
// loss / EMA > threshold. Only upward jumps count; a non-finite loss is the NaN skip's, not ours.
// Every rank takes the same decision without a collective: the losses are the all-reduced ones,
// identical on every rank, and the rule is the same arithmetic on them (as the NaN skip decides on
// the agreed values).
// On a spike at step s the run goes back, in the same processes, to the newest step checkpoint at
// a step c <= s - window - 1 (written before the window began): model, optimizer, schedule, loss
// scale, data position and rank 0's RNG as a resume loads them; the other ranks' RNG from the
// state they had when c was written (kept in memory). Under FSDP the model is rebuilt whole,
// loaded and sharded again, as at start-up. It then takes and drops the batches from c to the spike
// (those that led to it) plus skip_batches, applies lr_factor for lr_factor_steps optimizer steps,
// removes the abandoned checkpoints (steps after c), and emits the `rollback` event. So from there
// the run is, bit for bit, the run that skipped those batches from the start (FS_SKIP_BATCHES).
// The history is cut back to c too. A spike with no step checkpoint old enough (the window reaches
// back past the run's first checkpoint) is a warning and the run trains on: stopping would lose
// the run for a spike we cannot undo. One spike past max_rollbacks stops the run with an error
// naming the limit. Pruning (checkpoint.keep_last) keeps the checkpoints a future rollback may need:
// the newest at or before step - window and all newer ones (Checkpointer::setGuardWindow).
// Cost: the history (2 x window + checkpoint.every_steps doubles per dataset); each rollback reads one
// checkpoint and replays the data position; nothing is done per step on the device.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"

namespace fs::trainer {

struct SpikeVerdict {
  std::string dataset;
  std::string reason;          // in words, with the figures
  std::vector<double> losses;  // the window, the spike last
};

class LossSpikeGuard {
 public:
  // `checkpointEvery`: checkpoint.every_steps; the history reaches back far enough to hold the window
  // before any checkpoint a rollback can go to.
  LossSpikeGuard(protocol::GuardConfig config, int64_t checkpointEvery)
      : config_(std::move(config)), keep_(2 * config_.window + checkpointEvery + 1) {}

  bool enabled() const { return config_.enabled; }
  const protocol::GuardConfig& config() const { return config_; }

  // The verdict on step `step`'s losses: a spike (the first dataset in name order that has one), or
  // nullopt, in which case the losses join the history.
  std::optional<SpikeVerdict> observe(int64_t step, const std::map<std::string, double>& losses);
  // After a rollback to `step`: forgets the history after it and counts the rollback.
  void rewindTo(int64_t step);
  int rollbacks() const { return rollbacks_; }

 private:
  protocol::GuardConfig config_;
  int64_t keep_;
  std::map<std::string, std::deque<std::pair<int64_t, double>>> history_;  // per dataset: (step, loss)
  int rollbacks_ = 0;
};

// The rule on `window` (oldest first) and the new loss: the reason when it is a spike.
std::optional<std::string> spikeReason(const protocol::GuardConfig& config, const std::string& dataset,
                                       const std::vector<double>& window, double loss);

}  // namespace fs::trainer

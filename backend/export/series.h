// The numeric series of a run: every number of every telemetry event that changes
// over the run, named once here for both exports (TensorBoard tag = CSV series).
//
// NOTE [Series names]
// A series name is a '/'-separated path, so TensorBoard groups the charts by its
// first part. docs/export.md is the table; per event type:
//   step        loss/<ds>, rank_loss/<ds>/rank<r>, lr, grad_norm, loss_scale, epoch,
//               skipped (0/1), time/step_s, time/data_s, time/comm_s,
//               throughput/samples_per_s/<ds>, samples/<ds>, tokens/<ds>,
//               gates/layer<l>/attn, gates/layer<l>/ff
//   validation  validation/loss/<ds>, validation/duration_s
//   memory      memory/rank<r>/<field> for rss_bytes, peak_bytes, params, grads,
//               optimizer, gathered, activations, step_peak, gathered_units,
//               device_bytes, device_peak, device_reserved, device_reserved_peak;
//               memory/rank<r>/phase/<phase>/allocated_peak and .../reserved_peak
//   checkpoint  checkpoint/bytes, checkpoint/duration_s
//   data_stats  data/accepted/<ds>, data/dropped/<ds>/<reason>,
//               data/shard_dropped/<ds>/<shard>/<reason>
//   heartbeat   heartbeat/rank<r>/collective_seq
//   run_finished  final_loss/<ds>, run/duration_s (at step = its `steps`)
//   rollback    rollback/count, rollback/to_step, rollback/batches_skipped (at the spike's step)
// NOTE [Abandoned steps in an export]: after a rollback (the loss-spike guard) the run repeats
// the steps after its to_step. A point of an event that a later rollback went back past (its step
// > that rollback's to_step) is abandoned: it is exported as abandoned/<series>, so loss/<ds> is
// the run as it went on, one point per step, and the abandoned segment stays visible beside it.
// Optional fields absent from an event give no point. Events without numbers that
// change (run_started, layout, warning, control_ack, state, error) give none.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::exporter {

struct SeriesPoint {
  std::string series;
  std::int64_t step = 0;
  // Cumulative samples / text tokens seen when the point was taken: only points of
  // a step event carry them (a per-dataset series its dataset's, others the sum over
  // datasets); empty for every other event.
  std::optional<std::int64_t> samples;
  std::optional<std::int64_t> tokens;
  std::int64_t t_ms = 0;  // the event's time, unix milliseconds
  double value = 0;
};

// The rollbacks of a run (seq of the event, the step it went back to), in file order.
struct Rollbacks {
  std::vector<std::pair<std::uint64_t, std::int64_t>> at;
  void note(const protocol::Event& event);  // records a rollback event; ignores others
  // NOTE [Abandoned steps in an export]: a later rollback went back past `step`.
  bool abandons(std::uint64_t seq, std::int64_t step) const;
};

// Appends the points of `event` to `out`, in a fixed order (the order of the table); with
// `rollbacks`, the points an abandoned event gives are named abandoned/<series>.
void appendSeries(const protocol::Event& event, std::vector<SeriesPoint>* out,
                  const Rollbacks* rollbacks = nullptr);

}  // namespace fs::exporter

// StepRecord: one `step` event in a flat, reusable form for the fast ingest path.
//
// protocol::StepEvent holds five std::maps and a map of vectors; building one per
// line costs a dozen allocations, which is most of the time when a million steps are
// read. A StepRecord keeps the same values in flat vectors whose capacity is reused
// from one line to the next: per-dataset figures are (name, value) entries in the
// order the line lists them, and each dataset's per-rank losses are a slice of one
// shared array. toStepEvent() / fromStepEvent() convert exactly, which is what the
// tests use to check the fast decoder against the protocol decoder.
//
// REQUIRES (upheld by FastEventDecoder and fromStepEvent): dataset names are unique
// within each list, so the order of entries carries no meaning.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/wire/events.h"

namespace fs::app {

struct StepRecord {
  struct Double {
    std::string dataset;
    double value = 0;
  };
  struct Int {
    std::string dataset;
    std::int64_t value = 0;
  };
  struct RankSlice {
    std::string dataset;
    std::uint32_t begin = 0;  // into rank_loss_values
    std::uint32_t count = 0;
  };

  std::uint64_t seq = 0;
  std::int64_t t_ms = 0;  // unix milliseconds
  std::int64_t step = 0;
  int epoch = 0;
  std::vector<Int> samples;  // cumulative, all ranks
  std::vector<Int> tokens;   // cumulative, all ranks
  std::vector<Double> loss;  // mean over ranks
  std::vector<RankSlice> rank_loss;
  std::vector<double> rank_loss_values;
  double lr = 0;
  std::optional<double> grad_norm;
  std::optional<double> loss_scale;
  double step_time_s = 0;
  double data_time_s = 0;
  double comm_time_s = 0;
  std::vector<Double> samples_per_s;
  std::vector<protocol::GateValue> gates;  // in line order
  bool skipped = false;
  std::string skip_reason;

  // Empties every list but keeps their capacity.
  void clear();
};

// Exact conversions (names, values, NaN payloads as they are).
protocol::Event toStepEvent(const StepRecord& r);
// REQUIRES: std::holds_alternative<protocol::StepEvent>(e.body).
void fromStepEvent(const protocol::Event& e, StepRecord* out);

}  // namespace fs::app

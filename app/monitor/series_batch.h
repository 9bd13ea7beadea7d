// SeriesBatch and SeriesBatchBuilder: events turned into column appends for the
// SeriesStore, built on the follower's thread and handed to the GUI thread whole.
//
// A batch is columnar: a table of rows, one per event that produced points (its step,
// its time, the cumulative samples and tokens per dataset it reported), and per series
// the rows it has points in plus their y values. The GUI thread appends these arrays to
// the store with a few bulk copies: no object per event or per point ever crosses the
// thread boundary. The builder knows the event -> series mapping of NOTE [Series names]
// (series_names.h) and nothing about the store's past, so a new builder (a follower
// re-attached at an offset) continues a store seamlessly.
//
// Thread-safety: SeriesBatch is a plain value. A builder is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "app/monitor/step_record.h"
#include "backend/protocol/wire/events.h"

namespace fs::app {

struct SeriesBatch {
  // One row per event that produced points, in file order.
  struct Rows {
    std::vector<double> step;             // the event's step
    std::vector<std::int64_t> t_ms;       // the event's time, unix ms
    std::vector<std::uint8_t> from_step;  // 1 when the row is a `step` event (see SeriesStore rewinds)
    std::vector<std::string> datasets;    // names of the columns below
    // [dataset column][row]: cumulative samples / tokens the row's event reported,
    // NaN where it reported none for that dataset (the store carries the last value on).
    std::vector<std::vector<double>> samples;
    std::vector<std::vector<double>> tokens;
    std::size_t size() const { return step.size(); }
  };
  struct Points {
    std::string name;                 // NOTE [Series names]
    std::vector<std::uint32_t> rows;  // index into `rows`, ascending
    std::vector<double> y;            // same length as rows
  };

  Rows rows;
  std::vector<Points> series;                  // only series with at least one point
  std::optional<std::int64_t> first_event_ms;  // t of the first event of any type seen
  // Rows likely to follow soon (the rest of a backlog being read), so the store can
  // reserve once instead of growing its arrays step by step. 0: none known.
  std::size_t rows_hint = 0;

  bool empty() const { return rows.size() == 0 && !first_event_ms; }
};

class SeriesBatchBuilder {
 public:
  // A step event from the fast path (or converted from a protocol event).
  void addStep(const StepRecord& r);
  // Any event: steps, validation and memory produce points; every event's time may
  // become the batch's first_event_ms.
  void addEvent(const protocol::Event& e);
  // Events added since the last take().
  std::size_t pendingEvents() const { return pending_events_; }
  // The batch built so far; the builder starts an empty one.
  SeriesBatch take();

 private:
  struct Slot {
    std::string name;
    std::vector<std::uint32_t> rows;
    std::vector<double> y;
  };
  struct DatasetSlots {
    std::string name;
    int loss = -1;
    int samples_per_s = -1;
    int validation = -1;
    std::vector<int> rank_loss;  // by rank
    int column = -1;             // column in the current batch; -1 before its first value
  };

  int slot(std::string name);
  int datasetIndex(std::string_view name);
  int rankLossSlot(DatasetSlots& d, int rank);
  std::pair<int, int> gateSlots(int layer);
  int memorySlot(int rank, std::size_t category);
  std::uint32_t newRow(double step, std::int64_t timeMs, bool fromStep);
  void setCumulative(std::vector<std::vector<double>>* columns, int dataset, std::uint32_t row, double value);
  void point(int slot, std::uint32_t row, double y);
  void noteTime(std::int64_t timeMs);

  SeriesBatch batch_;
  std::size_t pending_events_ = 0;
  std::vector<Slot> slots_;  // stable ids for the builder's life; emptied by take()
  std::unordered_map<std::string, int> slot_ids_;
  std::vector<DatasetSlots> datasets_;
  std::size_t dataset_hint_ = 0;
  std::vector<std::pair<int, int>> gate_slots_;  // by layer, for layers 0..kMaxDenseLayer
  std::unordered_map<int, std::pair<int, int>> sparse_gate_slots_;
  std::vector<std::vector<int>> memory_slots_;  // [rank][category], -1 until used
  int lr_ = -1, grad_norm_ = -1, step_time_ = -1, data_time_ = -1, comm_time_ = -1;
  StepRecord scratch_;
};

}  // namespace fs::app

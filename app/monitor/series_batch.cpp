#include "app/monitor/series_batch.h"

#include <limits>
#include <utility>
#include <variant>

#include "app/monitor/series_names.h"

namespace fs::app {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxDenseLayer = 4096;  // gate layers below this index get a vector slot
constexpr int kMaxDenseRank = 1 << 16;

}  // namespace

int SeriesBatchBuilder::slot(std::string name) {
  auto it = slot_ids_.find(name);
  if (it != slot_ids_.end()) return it->second;
  const int id = static_cast<int>(slots_.size());
  slots_.push_back({name, {}, {}});
  slot_ids_.emplace(std::move(name), id);
  return id;
}

int SeriesBatchBuilder::datasetIndex(std::string_view name) {
  // Lines list datasets in the same order every time, so the slot after the last one
  // found is nearly always the right one.
  if (dataset_hint_ < datasets_.size() && datasets_[dataset_hint_].name == name)
    return static_cast<int>(dataset_hint_++);
  for (std::size_t i = 0; i < datasets_.size(); ++i) {
    if (datasets_[i].name == name) {
      dataset_hint_ = i + 1;
      return static_cast<int>(i);
    }
  }
  DatasetSlots d;
  d.name.assign(name);
  datasets_.push_back(std::move(d));
  dataset_hint_ = datasets_.size();
  return static_cast<int>(datasets_.size() - 1);
}

int SeriesBatchBuilder::rankLossSlot(DatasetSlots& d, int rank) {
  if (rank >= static_cast<int>(d.rank_loss.size())) d.rank_loss.resize(rank + 1, -1);
  int& s = d.rank_loss[rank];
  if (s < 0) s = slot(series::rankLoss(d.name, rank));
  return s;
}

std::pair<int, int> SeriesBatchBuilder::gateSlots(int layer) {
  std::pair<int, int>* found = nullptr;
  if (layer >= 0 && layer < kMaxDenseLayer) {
    if (layer >= static_cast<int>(gate_slots_.size())) gate_slots_.resize(layer + 1, {-1, -1});
    found = &gate_slots_[layer];
  } else {
    found = &sparse_gate_slots_.try_emplace(layer, -1, -1).first->second;
  }
  if (found->first < 0) *found = {slot(series::gateAttn(layer)), slot(series::gateFf(layer))};
  return *found;
}

int SeriesBatchBuilder::memorySlot(int rank, std::size_t category) {
  if (rank < 0 || rank >= kMaxDenseRank)
    return slot(series::memory(rank, series::kMemoryCategories[category]));
  if (rank >= static_cast<int>(memory_slots_.size())) memory_slots_.resize(rank + 1);
  auto& rankSlots = memory_slots_[rank];
  if (rankSlots.empty()) rankSlots.assign(series::kMemoryCategories.size(), -1);
  int& s = rankSlots[category];
  if (s < 0) s = slot(series::memory(rank, series::kMemoryCategories[category]));
  return s;
}

void SeriesBatchBuilder::noteTime(std::int64_t timeMs) {
  if (!batch_.first_event_ms) batch_.first_event_ms = timeMs;
  ++pending_events_;
}

std::uint32_t SeriesBatchBuilder::newRow(double step, std::int64_t timeMs, bool fromStep) {
  auto& rows = batch_.rows;
  const auto row = static_cast<std::uint32_t>(rows.step.size());
  rows.step.push_back(step);
  rows.t_ms.push_back(timeMs);
  rows.from_step.push_back(fromStep ? 1 : 0);
  for (auto& c : rows.samples) c.push_back(kNaN);
  for (auto& c : rows.tokens) c.push_back(kNaN);
  return row;
}

void SeriesBatchBuilder::setCumulative(std::vector<std::vector<double>>* columns, int dataset,
                                       std::uint32_t row, double value) {
  DatasetSlots& d = datasets_[dataset];
  auto& rows = batch_.rows;
  if (d.column < 0) {
    d.column = static_cast<int>(rows.datasets.size());
    rows.datasets.push_back(d.name);
    rows.samples.emplace_back(rows.size(), kNaN);
    rows.tokens.emplace_back(rows.size(), kNaN);
  }
  (*columns)[d.column][row] = value;
}

void SeriesBatchBuilder::point(int s, std::uint32_t row, double y) {
  slots_[s].rows.push_back(row);
  slots_[s].y.push_back(y);
}

void SeriesBatchBuilder::addStep(const StepRecord& r) {
  if (lr_ < 0) {
    lr_ = slot(std::string(series::kLr));
    grad_norm_ = slot(std::string(series::kGradNorm));
    step_time_ = slot(std::string(series::kStepTime));
    data_time_ = slot(std::string(series::kDataTime));
    comm_time_ = slot(std::string(series::kCommTime));
  }
  noteTime(r.t_ms);
  const std::uint32_t row = newRow(static_cast<double>(r.step), r.t_ms, true);
  for (const auto& e : r.samples)
    setCumulative(&batch_.rows.samples, datasetIndex(e.dataset), row, static_cast<double>(e.value));
  for (const auto& e : r.tokens)
    setCumulative(&batch_.rows.tokens, datasetIndex(e.dataset), row, static_cast<double>(e.value));
  for (const auto& e : r.loss) {
    DatasetSlots& d = datasets_[datasetIndex(e.dataset)];
    if (d.loss < 0) d.loss = slot(series::loss(d.name));
    point(d.loss, row, e.value);
  }
  for (const auto& e : r.rank_loss) {
    DatasetSlots& d = datasets_[datasetIndex(e.dataset)];
    for (std::uint32_t rank = 0; rank < e.count; ++rank) {
      point(rankLossSlot(d, static_cast<int>(rank)), row, r.rank_loss_values[e.begin + rank]);
    }
  }
  point(lr_, row, r.lr);
  if (r.grad_norm) point(grad_norm_, row, *r.grad_norm);
  point(step_time_, row, r.step_time_s);
  point(data_time_, row, r.data_time_s);
  point(comm_time_, row, r.comm_time_s);
  for (const auto& e : r.samples_per_s) {
    DatasetSlots& d = datasets_[datasetIndex(e.dataset)];
    if (d.samples_per_s < 0) d.samples_per_s = slot(series::samplesPerSecond(d.name));
    point(d.samples_per_s, row, e.value);
  }
  for (const auto& g : r.gates) {
    const auto [attn, ff] = gateSlots(g.layer);
    point(attn, row, g.attn);
    point(ff, row, g.ff);
  }
}

void SeriesBatchBuilder::addEvent(const protocol::Event& e) {
  if (std::holds_alternative<protocol::StepEvent>(e.body)) {
    fromStepEvent(e, &scratch_);
    addStep(scratch_);
    return;
  }
  noteTime(e.t);
  if (const auto* v = std::get_if<protocol::ValidationEvent>(&e.body)) {
    const std::uint32_t row = newRow(static_cast<double>(v->step), e.t, false);
    for (const auto& [name, loss] : v->loss) {
      DatasetSlots& d = datasets_[datasetIndex(name)];
      if (d.validation < 0) d.validation = slot(series::validationLoss(d.name));
      point(d.validation, row, loss);
    }
  } else if (const auto* m = std::get_if<protocol::MemoryEvent>(&e.body)) {
    const std::uint32_t row = newRow(static_cast<double>(m->step), e.t, false);
    for (const auto& rank : m->ranks) {
      const double values[] = {static_cast<double>(rank.rss_bytes),  static_cast<double>(rank.peak_bytes),
                               static_cast<double>(rank.params),     static_cast<double>(rank.grads),
                               static_cast<double>(rank.optimizer),  static_cast<double>(rank.gathered),
                               static_cast<double>(rank.activations)};
      for (std::size_t c = 0; c < std::size(values); ++c) point(memorySlot(rank.rank, c), row, values[c]);
      if (rank.device_bytes) point(memorySlot(rank.rank, 7), row, static_cast<double>(*rank.device_bytes));
      if (rank.device_peak) point(memorySlot(rank.rank, 8), row, static_cast<double>(*rank.device_peak));
      if (rank.gathered_units)
        point(memorySlot(rank.rank, 9), row, static_cast<double>(*rank.gathered_units));
      if (rank.step_peak) point(memorySlot(rank.rank, 10), row, static_cast<double>(*rank.step_peak));
      if (rank.device_reserved)
        point(memorySlot(rank.rank, 11), row, static_cast<double>(*rank.device_reserved));
      if (rank.device_reserved_peak)
        point(memorySlot(rank.rank, 12), row, static_cast<double>(*rank.device_reserved_peak));
    }
  }
}

SeriesBatch SeriesBatchBuilder::take() {
  SeriesBatch out = std::move(batch_);
  batch_ = SeriesBatch{};
  // The next batch is likely as big as this one (a backlog comes in equal chunks):
  // reserve that much rather than growing from nothing again.
  const std::size_t rows = out.rows.size();
  batch_.rows.step.reserve(rows);
  batch_.rows.t_ms.reserve(rows);
  batch_.rows.from_step.reserve(rows);
  for (Slot& s : slots_) {
    if (s.y.empty()) continue;
    const std::size_t n = s.y.size();
    out.series.push_back({s.name, std::move(s.rows), std::move(s.y)});
    s.rows = {};
    s.y = {};
    s.rows.reserve(n);
    s.y.reserve(n);
  }
  for (DatasetSlots& d : datasets_) d.column = -1;
  pending_events_ = 0;
  return out;
}

}  // namespace fs::app

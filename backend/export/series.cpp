#include "backend/export/series.h"

#include <numeric>
#include <type_traits>

namespace fs::exporter {

namespace {

using protocol::Event;

struct Emitter {
  std::int64_t step;
  std::int64_t t_ms;
  std::vector<SeriesPoint>* out;
  std::optional<std::int64_t> samples;  // step events only: every point gets these ...
  std::optional<std::int64_t> tokens;

  void add(std::string series, double value) {
    out->push_back({std::move(series), step, samples, tokens, t_ms, value});
  }
  // ... or a dataset's own counts, when the event has them for that dataset.
  void addForDataset(std::string series, double value, const std::map<std::string, std::int64_t>& samplesByDs,
                     const std::map<std::string, std::int64_t>& tokensByDs, const std::string& ds) {
    SeriesPoint p{std::move(series), step, std::nullopt, std::nullopt, t_ms, value};
    if (auto it = samplesByDs.find(ds); it != samplesByDs.end()) p.samples = it->second;
    if (auto it = tokensByDs.find(ds); it != tokensByDs.end()) p.tokens = it->second;
    out->push_back(std::move(p));
  }
};

std::optional<std::int64_t> total(const std::map<std::string, std::int64_t>& byDataset) {
  if (byDataset.empty()) return std::nullopt;
  std::int64_t sum = 0;
  for (const auto& [ds, n] : byDataset) sum += n;
  return sum;
}

void stepSeries(const protocol::StepEvent& e, Emitter em) {
  em.samples = total(e.samples);
  em.tokens = total(e.tokens);
  auto perDs = [&](const std::string& series, double v, const std::string& ds) {
    em.addForDataset(series, v, e.samples, e.tokens, ds);
  };
  for (const auto& [ds, v] : e.loss) perDs("loss/" + ds, v, ds);
  for (const auto& [ds, losses] : e.rank_loss)
    for (std::size_t r = 0; r < losses.size(); ++r)
      perDs("rank_loss/" + ds + "/rank" + std::to_string(r), losses[r], ds);
  em.add("lr", e.lr);
  if (e.grad_norm) em.add("grad_norm", *e.grad_norm);
  if (e.loss_scale) em.add("loss_scale", *e.loss_scale);
  em.add("epoch", e.epoch);
  em.add("skipped", e.skipped ? 1.0 : 0.0);
  em.add("time/step_s", e.step_time_s);
  em.add("time/data_s", e.data_time_s);
  em.add("time/comm_s", e.comm_time_s);
  for (const auto& [ds, v] : e.samples_per_s) perDs("throughput/samples_per_s/" + ds, v, ds);
  for (const auto& [ds, v] : e.samples) perDs("samples/" + ds, static_cast<double>(v), ds);
  for (const auto& [ds, v] : e.tokens) perDs("tokens/" + ds, static_cast<double>(v), ds);
  for (const auto& g : e.gates) {
    const std::string layer = "gates/layer" + std::to_string(g.layer);
    em.add(layer + "/attn", g.attn);
    em.add(layer + "/ff", g.ff);
  }
}

void memorySeries(const protocol::MemoryEvent& e, Emitter em) {
  for (const auto& r : e.ranks) {
    const std::string p = "memory/rank" + std::to_string(r.rank) + "/";
    auto bytes = [&](const char* field, std::int64_t v) { em.add(p + field, static_cast<double>(v)); };
    auto optional = [&](const char* field, const auto& v) {
      if (v) em.add(p + field, static_cast<double>(*v));
    };
    bytes("rss_bytes", r.rss_bytes);
    bytes("peak_bytes", r.peak_bytes);
    bytes("params", r.params);
    bytes("grads", r.grads);
    bytes("optimizer", r.optimizer);
    bytes("gathered", r.gathered);
    bytes("activations", r.activations);
    optional("step_peak", r.step_peak);
    optional("gathered_units", r.gathered_units);
    optional("device_bytes", r.device_bytes);
    optional("device_peak", r.device_peak);
    optional("device_reserved", r.device_reserved);
    optional("device_reserved_peak", r.device_reserved_peak);
    for (const auto& [phase, m] : r.device_phases) {
      em.add(p + "phase/" + phase + "/allocated_peak", static_cast<double>(m.allocated_peak));
      em.add(p + "phase/" + phase + "/reserved_peak", static_cast<double>(m.reserved_peak));
    }
  }
}

void dataStatsSeries(const protocol::DataStatsEvent& e, Emitter em) {
  for (const auto& [ds, n] : e.accepted) em.add("data/accepted/" + ds, static_cast<double>(n));
  for (const auto& [ds, reasons] : e.dropped)
    for (const auto& [reason, n] : reasons)
      em.add("data/dropped/" + ds + "/" + reason, static_cast<double>(n));
  for (const auto& [ds, shards] : e.shards)
    for (const auto& [shard, reasons] : shards)
      for (const auto& [reason, n] : reasons)
        em.add("data/shard_dropped/" + ds + "/" + shard + "/" + reason, static_cast<double>(n));
}

}  // namespace

void Rollbacks::note(const Event& event) {
  if (const auto* r = std::get_if<protocol::RollbackEvent>(&event.body))
    at.emplace_back(event.seq, r->to_step);
}

bool Rollbacks::abandons(std::uint64_t seq, std::int64_t step) const {
  for (const auto& [rollbackSeq, toStep] : at) {
    if (rollbackSeq > seq && step > toStep) return true;
  }
  return false;
}

void appendSeries(const Event& event, std::vector<SeriesPoint>* out, const Rollbacks* rollbacks) {
  const std::size_t first = out->size();
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::StepEvent>) {
          stepSeries(body, Emitter{body.step, event.t, out, {}, {}});
        } else if constexpr (std::is_same_v<T, protocol::ValidationEvent>) {
          Emitter em{body.step, event.t, out, {}, {}};
          for (const auto& [ds, v] : body.loss) em.add("validation/loss/" + ds, v);
          if (body.duration_s) em.add("validation/duration_s", *body.duration_s);
        } else if constexpr (std::is_same_v<T, protocol::MemoryEvent>) {
          memorySeries(body, Emitter{body.step, event.t, out, {}, {}});
        } else if constexpr (std::is_same_v<T, protocol::CheckpointEvent>) {
          Emitter em{body.step, event.t, out, {}, {}};
          em.add("checkpoint/bytes", static_cast<double>(body.bytes));
          em.add("checkpoint/duration_s", body.duration_s);
        } else if constexpr (std::is_same_v<T, protocol::DataStatsEvent>) {
          dataStatsSeries(body, Emitter{body.step, event.t, out, {}, {}});
        } else if constexpr (std::is_same_v<T, protocol::HeartbeatEvent>) {
          Emitter em{body.step, event.t, out, {}, {}};
          for (const auto& r : body.ranks)
            em.add("heartbeat/rank" + std::to_string(r.rank) + "/collective_seq",
                   static_cast<double>(r.collective_seq));
        } else if constexpr (std::is_same_v<T, protocol::RunFinishedEvent>) {
          Emitter em{body.steps, event.t, out, {}, {}};
          for (const auto& [ds, v] : body.final_loss) em.add("final_loss/" + ds, v);
          em.add("run/duration_s", body.duration_s);
        } else if constexpr (std::is_same_v<T, protocol::RollbackEvent>) {
          Emitter em{body.step, event.t, out, {}, {}};
          em.add("rollback/count", body.rollbacks);
          em.add("rollback/to_step", static_cast<double>(body.to_step));
          em.add("rollback/batches_skipped", static_cast<double>(body.batches_skipped));
        }
      },
      event.body);
  if (!rollbacks || rollbacks->at.empty()) return;
  for (std::size_t i = first; i < out->size(); ++i) {
    SeriesPoint& p = (*out)[i];
    if (rollbacks->abandons(event.seq, p.step)) p.series = "abandoned/" + p.series;
  }
}

}  // namespace fs::exporter

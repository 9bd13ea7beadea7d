#include "app/monitor/step_record.h"

#include <variant>

namespace fs::app {

void StepRecord::clear() {
  seq = 0;
  t_ms = 0;
  step = 0;
  epoch = 0;
  samples.clear();
  tokens.clear();
  loss.clear();
  rank_loss.clear();
  rank_loss_values.clear();
  lr = 0;
  grad_norm.reset();
  loss_scale.reset();
  step_time_s = 0;
  data_time_s = 0;
  comm_time_s = 0;
  samples_per_s.clear();
  gates.clear();
  skipped = false;
  skip_reason.clear();
}

protocol::Event toStepEvent(const StepRecord& r) {
  protocol::StepEvent s;
  s.step = r.step;
  s.epoch = r.epoch;
  for (const auto& e : r.samples) s.samples[e.dataset] = e.value;
  for (const auto& e : r.tokens) s.tokens[e.dataset] = e.value;
  for (const auto& e : r.loss) s.loss[e.dataset] = e.value;
  for (const auto& e : r.rank_loss) {
    auto first = r.rank_loss_values.begin() + e.begin;
    s.rank_loss[e.dataset].assign(first, first + e.count);
  }
  s.lr = r.lr;
  s.grad_norm = r.grad_norm;
  s.step_time_s = r.step_time_s;
  s.data_time_s = r.data_time_s;
  s.comm_time_s = r.comm_time_s;
  for (const auto& e : r.samples_per_s) s.samples_per_s[e.dataset] = e.value;
  s.gates = r.gates;
  s.skipped = r.skipped;
  s.skip_reason = r.skip_reason;
  s.loss_scale = r.loss_scale;
  return protocol::Event{r.seq, r.t_ms, std::move(s)};
}

void fromStepEvent(const protocol::Event& e, StepRecord* out) {
  const auto& s = std::get<protocol::StepEvent>(e.body);
  out->clear();
  out->seq = e.seq;
  out->t_ms = e.t;
  out->step = s.step;
  out->epoch = s.epoch;
  for (const auto& [name, v] : s.samples) out->samples.push_back({name, v});
  for (const auto& [name, v] : s.tokens) out->tokens.push_back({name, v});
  for (const auto& [name, v] : s.loss) out->loss.push_back({name, v});
  for (const auto& [name, values] : s.rank_loss) {
    const auto begin = static_cast<std::uint32_t>(out->rank_loss_values.size());
    out->rank_loss_values.insert(out->rank_loss_values.end(), values.begin(), values.end());
    out->rank_loss.push_back({name, begin, static_cast<std::uint32_t>(values.size())});
  }
  out->lr = s.lr;
  out->grad_norm = s.grad_norm;
  out->step_time_s = s.step_time_s;
  out->data_time_s = s.data_time_s;
  out->comm_time_s = s.comm_time_s;
  for (const auto& [name, v] : s.samples_per_s) out->samples_per_s.push_back({name, v});
  out->gates = s.gates;
  out->skipped = s.skipped;
  out->skip_reason = s.skip_reason;
  out->loss_scale = s.loss_scale;
}

}  // namespace fs::app

// The field tables (event_fields.h) are the names the protocol's encoder writes and
// its decoder requires: a body with every field set encodes exactly the table's keys,
// and a line without a required field is refused naming it.
#include "backend/protocol/wire/event_fields.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "backend/protocol/wire/event_codec.h"

namespace fs::protocol {
namespace {

template <class E>
std::set<std::string> tableNames() {
  std::set<std::string> out;
  for (const auto& d : fieldTable<E>()) out.emplace(d.name);
  return out;
}

std::set<std::string> keysOf(const nlohmann::json& j) {
  std::set<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
  return out;
}

StepEvent fullStep() {
  StepEvent s;
  s.step = 3;
  s.epoch = 1;
  s.samples = {{"laion", 8}};
  s.tokens = {{"laion", 80}};
  s.loss = {{"laion", 2.5}};
  s.rank_loss = {{"laion", {2.4, 2.6}}};
  s.lr = 1e-4;
  s.grad_norm = 1.5;
  s.step_time_s = 0.5;
  s.data_time_s = 0.1;
  s.comm_time_s = 0.05;
  s.samples_per_s = {{"laion", 16}};
  s.gates = {{0, 0.1, 0.2}};
  s.skipped = true;
  s.skip_reason = "nan";
  s.loss_scale = 1024.0;
  return s;
}

MemoryEvent fullMemory() {
  RankMemory m;
  m.rank = 1;
  m.rss_bytes = m.peak_bytes = m.params = m.grads = m.optimizer = m.gathered = m.activations = 7;
  m.device_bytes = 8;
  m.device_peak = 9;
  m.gathered_units = 2;
  m.gathered_at_peak = {1, 2};
  m.step_peak = 10;
  m.device = "cuda:0";
  m.device_reserved = 11;
  m.device_reserved_peak = 12;
  m.device_phases = {{"optimizer", {13, 14}}};
  return MemoryEvent{4, {m}};
}

TEST(EventFields, TablesNameWhatTheEncoderWrites) {
  const auto step = nlohmann::json::parse(encodeEventLine(Event{5, 6, fullStep()}));
  std::set<std::string> expected = tableNames<StepField>();
  expected.merge(tableNames<HeaderField>());
  EXPECT_EQ(keysOf(step), expected);
  EXPECT_EQ(keysOf(step["gates"][0]), tableNames<GateField>());

  const auto memory = nlohmann::json::parse(encodeEventLine(Event{5, 6, fullMemory()}));
  expected = tableNames<MemoryField>();
  expected.merge(tableNames<HeaderField>());
  EXPECT_EQ(keysOf(memory), expected);
  EXPECT_EQ(keysOf(memory["ranks"][0]), tableNames<RankMemoryField>());
}

TEST(EventFields, RequiredFieldsAreTheDecodersRequiredFields) {
  const auto line = nlohmann::json::parse(encodeEventLine(Event{5, 6, fullStep()}));
  for (const auto& d : kStepFields) {
    auto without = line;
    without.erase(std::string(d.name));
    const auto decoded = decodeEventLine(without.dump(), 1, 0);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->kind == DecodedLine::Kind::kError, d.required) << d.name;
  }
}

TEST(EventFields, FindFieldLooksUpByName) {
  static_assert(findField<StepField>("loss") == StepField::kLoss);
  static_assert(findField<StepField>("los") == StepField::kCount);
  static_assert(findField<HeaderField>("type") == HeaderField::kType);
  static_assert(requiredFieldMask<GateField>() == 0b111);
  EXPECT_EQ(fieldDecl(RankMemoryField::kGatheredAtPeak).name, "gathered_at_peak");
}

}  // namespace
}  // namespace fs::protocol

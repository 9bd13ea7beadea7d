// Field tables of the event lines a second decoder reads: the header every line
// starts with, and the `step` and `memory` bodies (docs/telemetry.md). Each table
// is the one declaration of its fields' wire names and whether they are required;
// events.cpp's describe() functions bind them to the record members the protocol's
// encoder and decoder walk, and the GUI's fast decoder (app/monitor/
// fast_event_decoder.h) looks keys up here and binds them to its flat StepRecord.
//
// NOTE [Event field tables]
// A table is indexed by its enum (StepField::kLoss is kStepFields[4]); the enum
// order is the table order and describe()'s (the encoder writes keys sorted, as
// nlohmann's objects hold them; a reader takes any order). Adding a field to one
// of these types: add the enum value and the table entry together, bind it in
// describe() (events.cpp) and in the fast decoder's switch (-Wswitch, in -Wall,
// warns until it handles the new value).
// Other event types list their names in describe() alone: only these four have a
// second reader.
//
// Thread-safety: constants and constexpr functions.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace fs::protocol {

struct FieldDecl {
  std::string_view name;  // the JSON key; a string literal, so name.data() ends in '\0'
  bool required = false;  // a line without it is an error naming it
};

// {"v":"1.5","seq":N,"t":<unix ms>,"type":"step", ...}
enum class HeaderField : std::uint8_t { kV, kSeq, kT, kType, kCount };
inline constexpr std::array<FieldDecl, 4> kHeaderFields = {{
    {"v", true},
    {"seq", true},
    {"t", true},
    {"type", true},
}};

enum class StepField : std::uint8_t {
  kStep,
  kEpoch,
  kSamples,
  kTokens,
  kLoss,
  kRankLoss,
  kLr,
  kGradNorm,
  kStepTime,
  kDataTime,
  kCommTime,
  kSamplesPerS,
  kGates,
  kSkipped,
  kSkipReason,
  kLossScale,
  kCount
};
inline constexpr std::array<FieldDecl, 16> kStepFields = {{
    {"step", true},
    {"epoch", true},
    {"samples", false},
    {"tokens", false},
    {"loss", true},
    {"rank_loss", false},
    {"lr", true},
    {"grad_norm", false},
    {"step_time_s", true},
    {"data_time_s", false},
    {"comm_time_s", false},
    {"samples_per_s", false},
    {"gates", false},
    {"skipped", false},
    {"skip_reason", false},
    {"loss_scale", false},
}};

// One entry of step.gates.
enum class GateField : std::uint8_t { kLayer, kAttn, kFf, kCount };
inline constexpr std::array<FieldDecl, 3> kGateFields = {{
    {"layer", true},
    {"attn", true},
    {"ff", true},
}};

enum class MemoryField : std::uint8_t { kStep, kRanks, kCount };
inline constexpr std::array<FieldDecl, 2> kMemoryFields = {{
    {"step", true},
    {"ranks", true},
}};

// One entry of memory.ranks.
enum class RankMemoryField : std::uint8_t {
  kRank,
  kRssBytes,
  kPeakBytes,
  kParams,
  kGrads,
  kOptimizer,
  kGathered,
  kActivations,
  kDeviceBytes,
  kDevicePeak,
  kGatheredUnits,
  kGatheredAtPeak,
  kStepPeak,
  kDevice,
  kDeviceReserved,
  kDeviceReservedPeak,
  kDevicePhases,
  kCount
};
inline constexpr std::array<FieldDecl, 17> kRankMemoryFields = {{
    {"rank", true},
    {"rss_bytes", true},
    {"peak_bytes", true},
    {"params", true},
    {"grads", true},
    {"optimizer", true},
    {"gathered", true},
    {"activations", true},
    {"device_bytes", false},
    {"device_peak", false},
    {"gathered_units", false},
    {"gathered_at_peak", false},
    {"step_peak", false},
    {"device", false},
    {"device_reserved", false},
    {"device_reserved_peak", false},
    {"device_phases", false},
}};

// The table of an enum: fieldTable<StepField>() is kStepFields.
template <class E>
constexpr const auto& fieldTable() {
  if constexpr (std::is_same_v<E, HeaderField>) return kHeaderFields;
  if constexpr (std::is_same_v<E, StepField>) return kStepFields;
  if constexpr (std::is_same_v<E, GateField>) return kGateFields;
  if constexpr (std::is_same_v<E, MemoryField>) return kMemoryFields;
  if constexpr (std::is_same_v<E, RankMemoryField>) return kRankMemoryFields;
}

template <class E>
constexpr const FieldDecl& fieldDecl(E field) {
  return fieldTable<E>()[static_cast<std::size_t>(field)];
}

// Bit i set for each field i whose name has `length` characters (0 past 31).
template <class E>
constexpr std::uint32_t fieldsOfLength(std::size_t length) {
  std::uint32_t mask = 0;
  const auto& table = fieldTable<E>();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].name.size() == length) mask |= 1u << i;
  }
  return mask;
}
template <class E>
inline constexpr auto kFieldsByLength = [] {
  std::array<std::uint32_t, 32> masks{};
  for (std::size_t n = 0; n < masks.size(); ++n) masks[n] = fieldsOfLength<E>(n);
  return masks;
}();

// The field whose name is `key`, or E::kCount for a key the table does not hold.
// Compares only names of the key's length: the fast decoder calls it per key.
template <class E>
constexpr E findField(std::string_view key) {
  if (key.size() >= kFieldsByLength<E>.size()) return E::kCount;
  for (std::uint32_t m = kFieldsByLength<E>[key.size()]; m != 0; m &= m - 1) {
    const auto i = static_cast<std::size_t>(std::countr_zero(m));
    if (fieldTable<E>()[i].name == key) return static_cast<E>(i);
  }
  return E::kCount;
}

// Bit i set for each required field i.
template <class E>
constexpr std::uint32_t requiredFieldMask() {
  std::uint32_t mask = 0;
  const auto& table = fieldTable<E>();
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].required) mask |= 1u << i;
  }
  return mask;
}

// Every enum has as many values as its table has entries; names fit kFieldsByLength.
template <class E>
constexpr bool namesFit() {
  for (const auto& d : fieldTable<E>()) {
    if (d.name.size() >= kFieldsByLength<E>.size()) return false;
  }
  return fieldTable<E>().size() <= 32;
}
static_assert(namesFit<HeaderField>() && namesFit<StepField>() && namesFit<GateField>() &&
              namesFit<MemoryField>() && namesFit<RankMemoryField>());
static_assert(kHeaderFields.size() == static_cast<std::size_t>(HeaderField::kCount));
static_assert(kStepFields.size() == static_cast<std::size_t>(StepField::kCount));
static_assert(kGateFields.size() == static_cast<std::size_t>(GateField::kCount));
static_assert(kMemoryFields.size() == static_cast<std::size_t>(MemoryField::kCount));
static_assert(kRankMemoryFields.size() == static_cast<std::size_t>(RankMemoryField::kCount));

}  // namespace fs::protocol

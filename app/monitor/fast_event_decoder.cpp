#include "app/monitor/fast_event_decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/event_fields.h"

namespace fs::app {
namespace {

namespace od = simdjson::ondemand;

// Every helper returns false to decline the line (NOTE [Fast decode path]); the caller
// then hands it to the protocol decoder, which owns every error message.

// True when `s` holds a byte below 0x20 or a backslash. Eight bytes at a time: these
// lines are a few hundred bytes and a million of them are scanned on open.
bool hasControlOrBackslash(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHighs = 0x8080808080808080ull;
  const char* p = s.data();
  std::size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    const std::uint64_t below = (w - kOnes * 0x20) & ~w & kHighs;  // some byte < 0x20
    const std::uint64_t x = w ^ (kOnes * '\\');
    const std::uint64_t backslash = (x - kOnes) & ~x & kHighs;  // some byte == '\\'
    if ((below | backslash) != 0) return true;
  }
  for (; n > 0; ++p, --n) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c == '\\') return true;
  }
  return false;
}

// The key of a field. Lines with a backslash never get here, so the raw key (up to its
// closing quote, which stage 1 has checked is there) is the key.
std::string_view keyOf(od::field& field) {
  const char* begin = field.key().raw();
  const char* end = begin;
  while (*end != '"') ++end;
  return {begin, static_cast<std::size_t>(end - begin)};
}

// A value that is not of the asked type gives INCORRECT_TYPE (or a number error)
// without being consumed, so each reader tries the common case first.

bool readInt64(od::value v, std::int64_t* out) {
  return v.get_int64().get(*out) == simdjson::SUCCESS;  // 3.0, 1e3, >= 2^63: the protocol decides
}

bool readUint64(od::value v, std::uint64_t* out) {
  return v.get_uint64().get(*out) == simdjson::SUCCESS;
}

bool readInt(od::value v, int* out) {
  std::int64_t i = 0;
  if (!readInt64(v, &i)) return false;
  if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max()) return false;
  *out = static_cast<int>(i);
  return true;
}

// NOTE [Non-finite doubles] in backend/protocol/wire/json_fields.h: numbers, the strings
// nan / inf / -inf (any case) and null (NaN).
bool readDouble(od::value v, double* out) {
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) {
    // Both libraries round correctly, so any finite value agrees, except the sign of a
    // zero: nlohmann reads "-0" as the integer 0 but "-0.0" (a float token) as -0.0.
    if (!std::isfinite(d)) return false;
    if (d == 0 && std::signbit(d)) {
      const std::string_view token = v.raw_json_token();
      if (token.find_first_of(".eE") == std::string_view::npos) d = 0.0;
    }
    *out = d;
    return true;
  }
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type == od::json_type::null) {
    bool is_null = false;
    if (v.is_null().get(is_null) != simdjson::SUCCESS || !is_null) return false;
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  std::string_view s;
  if (type != od::json_type::string || v.get_string().get(s) != simdjson::SUCCESS || s.size() > 9)
    return false;
  char lower[10] = {};
  std::transform(s.begin(), s.end(), lower,
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
  const std::string_view l(lower, s.size());
  if (l == "nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
  } else if (l == "inf" || l == "infinity" || l == "+inf") {
    *out = std::numeric_limits<double>::infinity();
  } else if (l == "-inf" || l == "-infinity") {
    *out = -std::numeric_limits<double>::infinity();
  } else {
    return false;
  }
  return true;
}

bool readBool(od::value v, bool* out) {
  return v.get_bool().get(*out) == simdjson::SUCCESS;
}

bool isNull(od::value& v) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS || type != od::json_type::null) return false;
  bool is_null = false;
  return v.is_null().get(is_null) == simdjson::SUCCESS && is_null;
}

// A field this reader does not know: ignored as the protocol decoder ignores it, but
// only when it is a valid scalar (simdjson would skip an invalid atom unread).
bool skipUnknown(od::value v) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  switch (type) {
    case od::json_type::number: {
      od::number n;
      return v.get_number().get(n) == simdjson::SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      return v.get_string().get(s) == simdjson::SUCCESS;
    }
    case od::json_type::boolean: {
      bool b = false;
      return v.get_bool().get(b) == simdjson::SUCCESS;
    }
    case od::json_type::null: {
      bool is_null = false;
      return v.is_null().get(is_null) == simdjson::SUCCESS && is_null;
    }
    default:
      return false;  // objects and arrays: nesting limits and the like are the protocol's
  }
}

template <class Entry>
bool hasDataset(const std::vector<Entry>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(), [&](const Entry& e) { return e.dataset == name; });
}

// {dataset: value}; `read` fills the value of a new entry from the field's value.
template <class Entry, class Read>
bool readMap(od::value v, std::vector<Entry>* out, Read read) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const std::string_view key = keyOf(field);
    if (hasDataset(*out, key)) return false;  // duplicate key: nlohmann keeps the last; decline
    Entry& e = out->emplace_back();
    e.dataset.assign(key);
    if (!read(field.value(), &e.value)) return false;
  }
  return true;
}

bool readRankLoss(od::value v, StepRecord* r) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const std::string_view key = keyOf(field);
    if (hasDataset(r->rank_loss, key)) return false;
    od::array arr;
    if (field.value().get_array().get(arr) != simdjson::SUCCESS) return false;
    StepRecord::RankSlice slice;
    slice.dataset.assign(key);
    slice.begin = static_cast<std::uint32_t>(r->rank_loss_values.size());
    for (auto element : arr) {
      od::value value;
      if (element.get(value) != simdjson::SUCCESS) return false;
      double d = 0;
      if (!readDouble(value, &d)) return false;
      r->rank_loss_values.push_back(d);
    }
    slice.count = static_cast<std::uint32_t>(r->rank_loss_values.size()) - slice.begin;
    r->rank_loss.push_back(std::move(slice));
  }
  return true;
}

// Field tables: backend/protocol/wire/event_fields.h (NOTE [Event field tables]). Each
// reader keeps a bit per field of its table, for the duplicate and required checks.

// Sets field f's bit in *seen (nothing for kCount, a key the table does not hold);
// false for a duplicate key (nlohmann keeps the last: decline).
template <class E>
bool markField(E f, std::uint32_t* seen) {
  if (f == E::kCount) return true;
  const std::uint32_t bit = 1u << static_cast<unsigned>(f);
  if ((*seen & bit) != 0) return false;
  *seen |= bit;
  return true;
}

bool readGates(od::value v, std::vector<protocol::GateValue>* out) {
  using protocol::GateField;
  constexpr std::uint32_t kAllRequired = protocol::requiredFieldMask<GateField>();
  od::array arr;
  if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
  for (auto element : arr) {
    od::object obj;
    if (element.get_object().get(obj) != simdjson::SUCCESS) return false;
    protocol::GateValue g;
    std::uint32_t seen = 0;
    for (auto f : obj) {
      od::field field;
      if (std::move(f).get(field) != simdjson::SUCCESS) return false;
      const GateField key = protocol::findField<GateField>(keyOf(field));
      bool ok = true;
      switch (key) {
        case GateField::kLayer:
          ok = readInt(field.value(), &g.layer);
          break;
        case GateField::kAttn:
          ok = readDouble(field.value(), &g.attn);
          break;
        case GateField::kFf:
          ok = readDouble(field.value(), &g.ff);
          break;
        case GateField::kCount:
          ok = skipUnknown(field.value());
          break;
      }
      if (!ok || !markField(key, &seen)) return false;
    }
    if ((seen & kAllRequired) != kAllRequired)
      return false;  // a missing required field: the protocol names it
    out->push_back(g);
  }
  return true;
}

// A top-level key of a line whose body is a `Body` (protocol::StepField,
// protocol::MemoryField): a header field, a body field, or neither (both kCount).
template <class Body>
struct LineKey {
  protocol::HeaderField header = protocol::HeaderField::kCount;
  Body body = Body::kCount;
};
template <class Body>
LineKey<Body> lineKey(std::string_view key) {
  LineKey<Body> k;
  k.header = protocol::findField<protocol::HeaderField>(key);
  if (k.header == protocol::HeaderField::kCount) k.body = protocol::findField<Body>(key);
  return k;
}

// Header fields take bits 0..3, body fields the bits after them.
constexpr unsigned kBodyBitBase = protocol::kHeaderFields.size();
template <class Body>
constexpr std::uint32_t kLineRequired =
    protocol::requiredFieldMask<protocol::HeaderField>() | protocol::requiredFieldMask<Body>()
                                                               << kBodyBitBase;

// markField over a whole line's keys.
template <class Body>
bool markSeen(const LineKey<Body>& k, std::uint32_t* seen) {
  std::uint32_t bit = 0;
  if (k.header != protocol::HeaderField::kCount) {
    bit = 1u << static_cast<unsigned>(k.header);
  } else if (k.body != Body::kCount) {
    bit = 1u << (kBodyBitBase + static_cast<unsigned>(k.body));
  }
  if ((*seen & bit) != 0) return false;
  *seen |= bit;
  return true;
}

// A header field shared by every event type; false declines. `type` receives the
// type field's value, which the caller checks.
bool readHeader(protocol::HeaderField f, od::value value, std::uint64_t* seq, std::int64_t* t,
                std::string_view* type) {
  using protocol::HeaderField;
  switch (f) {
    case HeaderField::kV: {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      auto version = protocol::parseSchemaVersion(s);
      return version.isOk() && version.value().major == protocol::kEventSchemaMajor;
    }
    case HeaderField::kSeq:
      return readUint64(value, seq);
    case HeaderField::kT:
      return readInt64(value, t);
    case HeaderField::kType:
      return value.get_string().get(*type) == simdjson::SUCCESS;
    case HeaderField::kCount:
      break;
  }
  return false;
}

// Reads one body field of a step line into *r; false declines the line.
bool readStepField(protocol::StepField f, od::value value, StepRecord* r) {
  using protocol::StepField;
  auto readIntValue = [](od::value v, std::int64_t* out) { return readInt64(v, out); };
  auto readDoubleValue = [](od::value v, double* out) { return readDouble(v, out); };
  switch (f) {
    case StepField::kStep:
      return readInt64(value, &r->step);
    case StepField::kEpoch:
      return readInt(value, &r->epoch);
    case StepField::kSamples:
      return isNull(value) || readMap(value, &r->samples, readIntValue);
    case StepField::kTokens:
      return isNull(value) || readMap(value, &r->tokens, readIntValue);
    case StepField::kLoss:
      return readMap(value, &r->loss, readDoubleValue);
    case StepField::kRankLoss:
      return isNull(value) || readRankLoss(value, r);
    case StepField::kLr:
      return readDouble(value, &r->lr);
    case StepField::kGradNorm: {
      if (isNull(value)) return true;  // null means absent for an optional
      double d = 0;
      if (!readDouble(value, &d)) return false;
      r->grad_norm = d;
      return true;
    }
    case StepField::kLossScale: {
      if (isNull(value)) return true;
      double d = 0;
      if (!readDouble(value, &d)) return false;
      r->loss_scale = d;
      return true;
    }
    case StepField::kStepTime:
      return readDouble(value, &r->step_time_s);
    case StepField::kDataTime:
      return readDouble(value, &r->data_time_s);  // null reads as NaN here, as in the protocol
    case StepField::kCommTime:
      return readDouble(value, &r->comm_time_s);
    case StepField::kSamplesPerS:
      return isNull(value) || readMap(value, &r->samples_per_s, readDoubleValue);
    case StepField::kGates:
      return isNull(value) || readGates(value, &r->gates);
    case StepField::kSkipped:
      return isNull(value) || readBool(value, &r->skipped);
    case StepField::kSkipReason: {
      if (isNull(value)) return true;
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      r->skip_reason.assign(s);
      return true;
    }
    case StepField::kCount:
      break;
  }
  return skipUnknown(value);
}

// memory.ranks[].device_phases: {phase: {"allocated_peak": int, "reserved_peak": int}}, both required.
bool readDevicePhases(od::value v, std::map<std::string, protocol::DevicePhaseMemory>* out) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const auto [at, inserted] = out->try_emplace(std::string(keyOf(field)));
    if (!inserted) return false;  // duplicate key: nlohmann keeps the last; decline
    od::object phase;
    if (field.value().get_object().get(phase) != simdjson::SUCCESS) return false;
    bool allocated = false, reserved = false;
    for (auto g : phase) {
      od::field inner;
      if (std::move(g).get(inner) != simdjson::SUCCESS) return false;
      const std::string_view key = keyOf(inner);
      bool ok = true;
      if (key == "allocated_peak") {
        ok = !allocated && readInt64(inner.value(), &at->second.allocated_peak);
        allocated = true;
      } else if (key == "reserved_peak") {
        ok = !reserved && readInt64(inner.value(), &at->second.reserved_peak);
        reserved = true;
      } else {
        ok = skipUnknown(inner.value());
      }
      if (!ok) return false;
    }
    if (!allocated || !reserved) return false;
  }
  return true;
}

// One entry of memory.ranks.
bool readRankMemory(od::value v, protocol::RankMemory* m) {
  using protocol::RankMemoryField;
  constexpr std::uint32_t kAllRequired = protocol::requiredFieldMask<RankMemoryField>();
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
  std::uint32_t seen = 0;
  // Optional fields: null means absent.
  auto readOptional = [](od::value value, auto* out) {
    if (isNull(value)) return true;
    typename std::remove_reference_t<decltype(*out)>::value_type x{};
    bool ok = false;
    if constexpr (std::is_same_v<decltype(x), int>) {
      ok = readInt(value, &x);
    } else {
      ok = readInt64(value, &x);
    }
    if (ok) *out = x;
    return ok;
  };
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const RankMemoryField key = protocol::findField<RankMemoryField>(keyOf(field));
    if (!markField(key, &seen)) return false;
    od::value value = field.value();
    bool ok = true;
    switch (key) {
      case RankMemoryField::kRank:
        ok = readInt(value, &m->rank);
        break;
      case RankMemoryField::kRssBytes:
        ok = readInt64(value, &m->rss_bytes);
        break;
      case RankMemoryField::kPeakBytes:
        ok = readInt64(value, &m->peak_bytes);
        break;
      case RankMemoryField::kParams:
        ok = readInt64(value, &m->params);
        break;
      case RankMemoryField::kGrads:
        ok = readInt64(value, &m->grads);
        break;
      case RankMemoryField::kOptimizer:
        ok = readInt64(value, &m->optimizer);
        break;
      case RankMemoryField::kGathered:
        ok = readInt64(value, &m->gathered);
        break;
      case RankMemoryField::kActivations:
        ok = readInt64(value, &m->activations);
        break;
      case RankMemoryField::kDeviceBytes:
        ok = readOptional(value, &m->device_bytes);
        break;
      case RankMemoryField::kDevicePeak:
        ok = readOptional(value, &m->device_peak);
        break;
      case RankMemoryField::kGatheredUnits:
        ok = readOptional(value, &m->gathered_units);
        break;
      case RankMemoryField::kStepPeak:
        ok = readOptional(value, &m->step_peak);
        break;
      case RankMemoryField::kDeviceReserved:
        ok = readOptional(value, &m->device_reserved);
        break;
      case RankMemoryField::kDeviceReservedPeak:
        ok = readOptional(value, &m->device_reserved_peak);
        break;
      case RankMemoryField::kDevice: {  // optional string: null means absent ("")
        if (isNull(value)) break;
        std::string_view s;
        if (value.get_string().get(s) != simdjson::SUCCESS) return false;
        m->device.assign(s);
        break;
      }
      case RankMemoryField::kDevicePhases:  // optional map: null means absent (empty)
        ok = isNull(value) || readDevicePhases(value, &m->device_phases);
        break;
      case RankMemoryField::kGatheredAtPeak: {  // optional list of ints: null means absent (empty)
        if (isNull(value)) break;
        od::array arr;
        if (value.get_array().get(arr) != simdjson::SUCCESS) return false;
        for (auto element : arr) {
          od::value e;
          int x = 0;
          if (element.get(e) != simdjson::SUCCESS || !readInt(e, &x)) return false;
          m->gathered_at_peak.push_back(x);
        }
        break;
      }
      case RankMemoryField::kCount:
        ok = skipUnknown(value);
        break;
    }
    if (!ok) return false;
  }
  return (seen & kAllRequired) == kAllRequired;
}

// A whole memory line; false declines.
bool readMemory(od::object obj, protocol::Event* out) {
  using protocol::HeaderField;
  using protocol::MemoryField;
  protocol::MemoryEvent mem;
  std::uint64_t seq = 0;
  std::int64_t t = 0;
  std::uint32_t seen = 0;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const LineKey<MemoryField> key = lineKey<MemoryField>(keyOf(field));
    if (!markSeen(key, &seen)) return false;
    od::value value = field.value();
    bool ok = true;
    if (key.header != HeaderField::kCount) {
      std::string_view type;
      ok = readHeader(key.header, value, &seq, &t, &type) &&
           (key.header != HeaderField::kType || type == protocol::MemoryEvent::kType);
    } else {
      switch (key.body) {
        case MemoryField::kStep:
          ok = readInt64(value, &mem.step);
          break;
        case MemoryField::kRanks: {
          od::array arr;
          if (value.get_array().get(arr) != simdjson::SUCCESS) return false;
          for (auto element : arr) {
            od::value rank;
            if (element.get(rank) != simdjson::SUCCESS || !readRankMemory(rank, &mem.ranks.emplace_back()))
              return false;
          }
          break;
        }
        case MemoryField::kCount:
          ok = skipUnknown(value);
          break;
      }
    }
    if (!ok) return false;
  }
  if ((seen & kLineRequired<MemoryField>) != kLineRequired<MemoryField>) return false;
  *out = protocol::Event{seq, t, std::move(mem)};
  return true;
}

}  // namespace

struct FastEventDecoder::Impl {
  od::parser parser;
};

std::size_t FastEventDecoder::padding() {
  return simdjson::SIMDJSON_PADDING;
}

FastEventDecoder::FastEventDecoder() : impl_(std::make_unique<Impl>()) {}
FastEventDecoder::~FastEventDecoder() = default;

FastEventDecoder::Result FastEventDecoder::decode(std::string_view line, StepRecord* step,
                                                  protocol::Event* memory) {
  if (line.size() > kMaxLineBytes) return Result::kNotHandled;
  scratch_.assign(line);
  scratch_.append(padding(), ' ');
  return decodePadded(std::string_view(scratch_.data(), line.size()), step, memory);
}

FastEventDecoder::Result FastEventDecoder::decodePadded(std::string_view line, StepRecord* step,
                                                        protocol::Event* memory) {
  if (line.empty() || line.size() > kMaxLineBytes || line.front() != '{') return Result::kNotHandled;
  if (hasControlOrBackslash(line)) return Result::kNotHandled;
  step->clear();

  od::document doc;
  if (impl_->parser.iterate(line.data(), line.size(), line.size() + padding()).get(doc) != simdjson::SUCCESS)
    return Result::kNotHandled;
  od::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return Result::kNotHandled;

  using protocol::HeaderField;
  using protocol::StepField;
  std::uint32_t seen = 0;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return Result::kNotHandled;
    const LineKey<StepField> key = lineKey<StepField>(keyOf(field));
    if (!markSeen(key, &seen)) return Result::kNotHandled;
    if (key.header == HeaderField::kCount) {
      if (!readStepField(key.body, field.value(), step)) return Result::kNotHandled;
      continue;
    }
    std::string_view type;
    if (!readHeader(key.header, field.value(), &step->seq, &step->t_ms, &type)) return Result::kNotHandled;
    if (key.header == HeaderField::kType && type != protocol::StepEvent::kType) {
      // Another type: a memory line is read again from the start; fields may come in any order.
      if (type == protocol::MemoryEvent::kType && memory != nullptr) return decodeMemoryPadded(line, memory);
      return Result::kNotHandled;
    }
  }
  if ((seen & kLineRequired<StepField>) != kLineRequired<StepField>) return Result::kNotHandled;
  // Trailing content after the object: simdjson has a location for it; at the end it
  // answers OUT_OF_BOUNDS.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return Result::kNotHandled;
  return Result::kStep;
}

FastEventDecoder::Result FastEventDecoder::decodeMemoryPadded(std::string_view line, protocol::Event* out) {
  // Iterated again from the start: the step pass stopped at the type field, and
  // fields may come in any order.
  od::document doc;
  if (impl_->parser.iterate(line.data(), line.size(), line.size() + padding()).get(doc) != simdjson::SUCCESS)
    return Result::kNotHandled;
  od::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS || !readMemory(obj, out)) return Result::kNotHandled;
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return Result::kNotHandled;
  return Result::kMemory;
}

}  // namespace fs::app

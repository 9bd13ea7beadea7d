#include "app/monitor/fast_event_decoder.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/protocol/event_codec.h"

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

// NOTE [Non-finite doubles] in backend/protocol/json_fields.h: numbers, the strings
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

bool readGates(od::value v, std::vector<protocol::GateValue>* out) {
  od::array arr;
  if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
  for (auto element : arr) {
    od::object obj;
    if (element.get_object().get(obj) != simdjson::SUCCESS) return false;
    protocol::GateValue g;
    unsigned seen = 0;
    for (auto f : obj) {
      od::field field;
      if (std::move(f).get(field) != simdjson::SUCCESS) return false;
      const std::string_view key = keyOf(field);
      unsigned bit = 0;
      bool ok = true;
      if (key == "layer") {
        bit = 1;
        ok = readInt(field.value(), &g.layer);
      } else if (key == "attn") {
        bit = 2;
        ok = readDouble(field.value(), &g.attn);
      } else if (key == "ff") {
        bit = 4;
        ok = readDouble(field.value(), &g.ff);
      } else {
        ok = skipUnknown(field.value());
      }
      if (!ok || (seen & bit) != 0) return false;
      seen |= bit;
    }
    if (seen != 7) return false;  // a missing required gate field: the protocol names it
    out->push_back(g);
  }
  return true;
}

// Top-level fields, one bit each, for the duplicate and required checks.
enum Field : std::uint32_t {
  kV = 1u << 0,
  kSeq = 1u << 1,
  kT = 1u << 2,
  kType = 1u << 3,
  kStep = 1u << 4,
  kEpoch = 1u << 5,
  kSamples = 1u << 6,
  kTokens = 1u << 7,
  kLoss = 1u << 8,
  kRankLoss = 1u << 9,
  kLr = 1u << 10,
  kGradNorm = 1u << 11,
  kStepTime = 1u << 12,
  kDataTime = 1u << 13,
  kSamplesPerS = 1u << 14,
  kGates = 1u << 15,
  kSkipped = 1u << 16,
  kSkipReason = 1u << 17,
  kCommTime = 1u << 18,
};
constexpr std::uint32_t kRequired = kV | kSeq | kT | kType | kStep | kEpoch | kLoss | kLr | kStepTime;

std::uint32_t fieldBit(std::string_view key) {
  auto is = [&](std::string_view name, Field bit) -> std::uint32_t { return key == name ? bit : 0u; };
  switch (key.size()) {
    case 1:
      return is("v", kV) | is("t", kT);
    case 2:
      return is("lr", kLr);
    case 3:
      return is("seq", kSeq);
    case 4:
      return key[0] == 't' ? is("type", kType) : key[0] == 's' ? is("step", kStep) : is("loss", kLoss);
    case 5:
      return key[0] == 'e' ? is("epoch", kEpoch) : is("gates", kGates);
    case 6:
      return is("tokens", kTokens);
    case 7:
      return key[1] == 'a' ? is("samples", kSamples) : is("skipped", kSkipped);
    case 9:
      return key[0] == 'g' ? is("grad_norm", kGradNorm) : is("rank_loss", kRankLoss);
    case 11:
      return key[0] == 'd'   ? is("data_time_s", kDataTime)
             : key[0] == 'c' ? is("comm_time_s", kCommTime)
             : key[1] == 't' ? is("step_time_s", kStepTime)
                             : is("skip_reason", kSkipReason);
    case 13:
      return is("samples_per_s", kSamplesPerS);
    default:
      return 0;
  }
}

// Reads one field of a step line into *r; false declines the line. Sets *not_step when
// the type field names another type (the caller stops at once), and *is_memory when
// that type is "memory".
bool readField(std::uint32_t bit, od::value value, StepRecord* r, bool* not_step, bool* is_memory) {
  auto readIntValue = [](od::value v, std::int64_t* out) { return readInt64(v, out); };
  switch (bit) {
    case kV: {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      auto version = protocol::parseSchemaVersion(s);
      return version.isOk() && version.value().major == protocol::kEventSchemaMajor;
    }
    case kSeq:
      return readUint64(value, &r->seq);
    case kT:
      return readInt64(value, &r->t_ms);
    case kType: {
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      if (s != protocol::StepEvent::kType) *not_step = true;
      if (s == protocol::MemoryEvent::kType) *is_memory = true;
      return !*not_step;
    }
    case kStep:
      return readInt64(value, &r->step);
    case kEpoch:
      return readInt(value, &r->epoch);
    case kSamples:
      return isNull(value) || readMap(value, &r->samples, readIntValue);
    case kTokens:
      return isNull(value) || readMap(value, &r->tokens, readIntValue);
    case kLoss:
      return readMap(value, &r->loss, [](od::value v, double* out) { return readDouble(v, out); });
    case kRankLoss:
      return isNull(value) || readRankLoss(value, r);
    case kLr:
      return readDouble(value, &r->lr);
    case kGradNorm: {
      if (isNull(value)) return true;  // null means absent for an optional
      double d = 0;
      if (!readDouble(value, &d)) return false;
      r->grad_norm = d;
      return true;
    }
    case kStepTime:
      return readDouble(value, &r->step_time_s);
    case kDataTime:
      return readDouble(value, &r->data_time_s);  // null reads as NaN here, as in the protocol
    case kCommTime:
      return readDouble(value, &r->comm_time_s);
    case kSamplesPerS:
      return isNull(value) ||
             readMap(value, &r->samples_per_s, [](od::value v, double* out) { return readDouble(v, out); });
    case kGates:
      return isNull(value) || readGates(value, &r->gates);
    case kSkipped:
      return isNull(value) || readBool(value, &r->skipped);
    case kSkipReason: {
      if (isNull(value)) return true;
      std::string_view s;
      if (value.get_string().get(s) != simdjson::SUCCESS) return false;
      r->skip_reason.assign(s);
      return true;
    }
    default:
      return skipUnknown(value);
  }
}

// A header field shared by every event type; false declines.
bool readHeader(std::uint32_t bit, od::value value, std::uint64_t* seq, std::int64_t* t) {
  if (bit == kV) {
    std::string_view s;
    if (value.get_string().get(s) != simdjson::SUCCESS) return false;
    auto version = protocol::parseSchemaVersion(s);
    return version.isOk() && version.value().major == protocol::kEventSchemaMajor;
  }
  return bit == kSeq ? readUint64(value, seq) : readInt64(value, t);
}

// One entry of memory.ranks (field list: describe(V&, RankMemory&) in events.cpp).
bool readRankMemory(od::value v, protocol::RankMemory* m) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return false;
  constexpr std::uint32_t kAllRequired = 0xFF;  // rank .. activations
  std::uint32_t seen = 0;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const std::string_view key = keyOf(field);
    static constexpr std::string_view kNames[] = {"rank",         "rss_bytes",  "peak_bytes", "params",
                                                  "grads",        "optimizer",  "gathered",   "activations",
                                                  "device_bytes", "device_peak", "gathered_units",
                                                  "gathered_at_peak"};
    std::size_t i = 0;
    while (i < std::size(kNames) && kNames[i] != key) ++i;
    if (i == std::size(kNames)) {
      if (!skipUnknown(field.value())) return false;
      continue;
    }
    if ((seen & (1u << i)) != 0) return false;  // duplicate key
    seen |= 1u << i;
    od::value value = field.value();
    bool ok = true;
    switch (i) {
      case 0:
        ok = readInt(value, &m->rank);
        break;
      case 1:
        ok = readInt64(value, &m->rss_bytes);
        break;
      case 2:
        ok = readInt64(value, &m->peak_bytes);
        break;
      case 3:
        ok = readInt64(value, &m->params);
        break;
      case 4:
        ok = readInt64(value, &m->grads);
        break;
      case 5:
        ok = readInt64(value, &m->optimizer);
        break;
      case 6:
        ok = readInt64(value, &m->gathered);
        break;
      case 7:
        ok = readInt64(value, &m->activations);
        break;
      case 10: {  // optional: null means absent
        if (isNull(value)) break;
        int x = 0;
        ok = readInt(value, &x);
        m->gathered_units = x;
        break;
      }
      case 11: {  // optional list of ints: null means absent (empty)
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
      default: {  // optional: null means absent
        if (isNull(value)) break;
        std::int64_t x = 0;
        ok = readInt64(value, &x);
        (i == 8 ? m->device_bytes : m->device_peak) = x;
      }
    }
    if (!ok) return false;
  }
  return (seen & kAllRequired) == kAllRequired;
}

// A whole memory line; false declines.
bool readMemory(od::object obj, protocol::Event* out) {
  protocol::MemoryEvent mem;
  std::uint64_t seq = 0;
  std::int64_t t = 0;
  std::uint32_t seen = 0;
  constexpr std::uint32_t kRanks = 1u << 31;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return false;
    const std::string_view key = keyOf(field);
    std::uint32_t bit = fieldBit(key);
    if (bit != kV && bit != kSeq && bit != kT && bit != kType && bit != kStep)
      bit = key == "ranks" ? kRanks : 0;
    if ((seen & bit) != 0) return false;
    seen |= bit;
    od::value value = field.value();
    bool ok = true;
    if (bit == kType) {
      std::string_view s;
      ok = value.get_string().get(s) == simdjson::SUCCESS && s == protocol::MemoryEvent::kType;
    } else if (bit == kStep) {
      ok = readInt64(value, &mem.step);
    } else if (bit == kRanks) {
      od::array arr;
      if (value.get_array().get(arr) != simdjson::SUCCESS) return false;
      for (auto element : arr) {
        od::value rank;
        if (element.get(rank) != simdjson::SUCCESS || !readRankMemory(rank, &mem.ranks.emplace_back()))
          return false;
      }
    } else if (bit == 0) {
      ok = skipUnknown(value);
    } else {
      ok = readHeader(bit, value, &seq, &t);
    }
    if (!ok) return false;
  }
  if (seen != (kV | kSeq | kT | kType | kStep | kRanks)) return false;
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

  std::uint32_t seen = 0;
  bool not_step = false;
  bool is_memory = false;
  for (auto f : obj) {
    od::field field;
    if (std::move(f).get(field) != simdjson::SUCCESS) return Result::kNotHandled;
    const std::string_view key = keyOf(field);
    const std::uint32_t bit = fieldBit(key);
    if ((seen & bit) != 0) return Result::kNotHandled;  // duplicate key
    seen |= bit;
    if (!readField(bit, field.value(), step, &not_step, &is_memory)) {
      if (is_memory && memory != nullptr) return decodeMemoryPadded(line, memory);
      return Result::kNotHandled;
    }
  }
  if ((seen & kRequired) != kRequired) return Result::kNotHandled;
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

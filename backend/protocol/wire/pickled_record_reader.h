// Reads a checkpoint record (checkpoint_record.h) from a pickled dict through
// its one field list, whatever holds the unpickled values: the engine's
// LibTorch IValue (backend/checkpoint/record_ivalue.cpp) and the inspector's
// torch-free PyValue (backend/inspect/record_pyvalue.cpp) each give an
// adapter; this walker is the one place that knows how each field type is
// carried in a pickle (NOTE [Checkpoint records]).
//
// An adapter A has `using Value = ...;` and, on `const Value&`:
//   const Value* find(v, key)         a str-keyed dict's entry; nullptr if absent or not a dict
//   bool isNone(v), isDict(v), isStr(v), isList(v)
//   std::string typeName(v)           for messages ("a list", "a dict" follow "not")
//   std::optional<int64_t> asInt(v)   an int (not a bool)
//   std::optional<double> asNumber(v) an int or a float (not a bool)
//   std::optional<bool> asBool(v)
//   const std::string& str(v)         REQUIRES isStr(v)
//   std::size_t size(v); const Value& item(v, i)   REQUIRES isList(v)
//   Status bytes(v, field, Bytes&)    a 1-d uint8 tensor's bytes; errors name `field`
//
// Thread-safety: a reader is used by one thread; the adapter's calls happen on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::protocol {

template <class T>
inline constexpr bool kIsOptional = false;
template <class T>
inline constexpr bool kIsOptional<std::optional<T>> = true;

template <class A>
class PickledRecordReader {
 public:
  using Value = typename A::Value;

  PickledRecordReader(A& adapter, const Value& dict, std::string prefix, std::string* error)
      : a_(adapter), dict_(dict), prefix_(std::move(prefix)), error_(error) {}

  template <class T>
  void req(const char* key, T& out) {
    if (!error_->empty()) return;
    const Value* v = a_.find(dict_, key);
    if (!v) {
      *error_ = prefix_ + key + " is missing";
      return;
    }
    read(*v, prefix_ + key, out);
  }
  template <class T>
  void opt(const char* key, T& out) {
    if (!error_->empty()) return;
    const Value* v = a_.find(dict_, key);
    if (!v || a_.isNone(*v)) return;
    if constexpr (kIsOptional<T>) {
      typename T::value_type value{};
      read(*v, prefix_ + key, value);
      if (error_->empty()) out = std::move(value);
    } else {
      read(*v, prefix_ + key, out);
    }
  }
  template <class T>
  void lax(const char* key, T& out) {
    opt(key, out);
  }

 private:
  void fail(const std::string& field, const Value& v, const char* expected) {
    if (error_->empty()) *error_ = field + " is a " + a_.typeName(v) + ", not " + expected;
  }

  bool readBytes(const Value& v, const std::string& field, Bytes& out) {
    Status s = a_.bytes(v, field, out);
    if (!s && error_->empty()) *error_ = s.message();
    return s.isOk();
  }

  template <class T>
  void read(const Value& v, const std::string& field, T& out) {
    if constexpr (std::is_same_v<T, Bytes>) {
      readBytes(v, field, out);
    } else if constexpr (std::is_same_v<T, std::vector<Bytes>>) {
      if (!a_.isList(v)) return fail(field, v, "a list");
      out.clear();
      for (std::size_t i = 0; i < a_.size(v); ++i) {
        Bytes b;
        if (!readBytes(a_.item(v, i), field + "." + std::to_string(i), b)) return;
        out.push_back(std::move(b));
      }
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>> ||
                         std::is_same_v<T, std::vector<std::int64_t>>) {
      if (!a_.isList(v)) return fail(field, v, "a list");
      out.clear();
      for (std::size_t i = 0; i < a_.size(v); ++i) {
        const auto x = a_.asInt(a_.item(v, i));
        if (!x) return fail(field + "." + std::to_string(i), a_.item(v, i), "an int");
        out.push_back(static_cast<typename T::value_type>(*x));  // uint64 words pickle as int64
      }
    } else if constexpr (requires { decodeJsonText(std::string_view(), out.value); }) {  // JsonText<R>
      if (!a_.isStr(v)) return fail(field, v, "a str");
      if (Status s = decodeJsonText(a_.str(v), out.value); !s) {
        if (error_->empty()) *error_ = field + ": " + s.message();
      }
    } else if constexpr (requires(PickledRecordReader & r) { describe(r, out); }) {
      if (!a_.isDict(v)) return fail(field, v, "a dict");
      PickledRecordReader nested(a_, v, field + ".", error_);
      describe(nested, out);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!a_.isStr(v)) return fail(field, v, "a str");
      out = a_.str(v);
    } else if constexpr (std::is_same_v<T, double>) {
      const auto d = a_.asNumber(v);
      if (!d) return fail(field, v, "a number");
      out = *d;
    } else if constexpr (std::is_same_v<T, bool>) {
      const auto b = a_.asBool(v);
      if (!b) return fail(field, v, "a bool");
      out = *b;
    } else {
      static_assert(std::is_same_v<T, std::int64_t>, "a field type the pickle walker does not know");
      const auto i = a_.asInt(v);
      if (!i) return fail(field, v, "an int");
      out = *i;
    }
  }

  A& a_;
  const Value& dict_;
  std::string prefix_;
  std::string* error_;
};

// The resume record under "flamingo_studio" of a pickled checkpoint, checked
// (checkResumeRecord). Errors (Corruption) name the field:
// "flamingo_studio.rng_own is missing", "flamingo_studio: rng_own: 3 words, not 4".
template <class A>
StatusOr<ResumeRecord> readPickledResumeRecord(A& adapter, const typename A::Value& value) {
  if (!adapter.isDict(value))
    return Status::corruption("flamingo_studio is a " + adapter.typeName(value) + ", not a dict");
  ResumeRecord record;
  std::string error;
  PickledRecordReader<A> r(adapter, value, "flamingo_studio.", &error);
  describe(r, record);
  if (!error.empty()) return Status::corruption(error);
  if (Status s = checkResumeRecord(record); !s) return s.withMessage("flamingo_studio: " + s.message());
  return record;
}

}  // namespace fs::protocol

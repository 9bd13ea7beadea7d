#include "backend/checkpoint/record_ivalue.h"

#include <torch/torch.h>

#include <concepts>
#include <type_traits>

namespace fs::engine {
namespace {

using c10::IValue;
using GDict = c10::impl::GenericDict;
using GList = c10::impl::GenericList;
using protocol::Bytes;
using protocol::JsonText;
using protocol::Status;

class IValueWriter;
template <class T>
concept Described = requires(IValueWriter& w, T& t) {
  describe(w, t);
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

IValue bytesTensor(const Bytes& b) {
  auto t = torch::empty({static_cast<int64_t>(b.data.size())}, torch::kUInt8);
  if (!b.data.empty()) std::memcpy(t.data_ptr<uint8_t>(), b.data.data(), b.data.size());
  return t;
}

class IValueWriter {
 public:
  explicit IValueWriter(GDict* out) : out_(out) {}

  template <class T>
  void req(const char* key, const T& v) {
    out_->insert(key, toIValue(v));
  }
  template <class T>
  void opt(const char* key, const T& v) {
    if constexpr (IsOptional<T>::value) {
      if (v) req(key, *v);
    } else if (!(v == T{})) {
      req(key, v);
    }
  }
  template <class T>
  void lax(const char* key, const T& v) {
    req(key, v);
  }

 private:
  template <class T>
  static IValue toIValue(const T& v) {
    if constexpr (std::is_same_v<T, Bytes>) {
      return bytesTensor(v);
    } else if constexpr (std::is_same_v<T, std::vector<Bytes>>) {
      GList l(c10::TensorType::get());
      for (const auto& b : v) l.push_back(bytesTensor(b));
      return l;
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>> ||
                         std::is_same_v<T, std::vector<std::int64_t>>) {
      GList l(c10::IntType::get());
      for (auto x : v) l.push_back(static_cast<int64_t>(x));
      return l;
    } else if constexpr (requires { protocol::encodeJsonText(v.value); }) {  // JsonText<R>
      return IValue(protocol::encodeJsonText(v.value));
    } else if constexpr (Described<T>) {
      GDict d(c10::StringType::get(), c10::AnyType::get());
      IValueWriter w(&d);
      describe(w, const_cast<T&>(v));  // one list for reading and writing; read only here
      return d;
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, double> ||
                         std::is_same_v<T, bool>) {
      return IValue(v);
    } else {
      static_assert(std::is_same_v<T, std::int64_t>, "a field type the pickle walker does not know");
      return IValue(v);
    }
  }

  GDict* out_;
};

class IValueReader {
 public:
  IValueReader(GDict in, std::string prefix, std::string* error)
      : in_(std::move(in)), prefix_(std::move(prefix)), error_(error) {}

  template <class T>
  void req(const char* key, T& out) {
    if (!error_->empty()) return;
    auto it = in_.find(key);
    if (it == in_.end()) {
      *error_ = prefix_ + key + " is missing";
      return;
    }
    read(it->value(), prefix_ + key, out);
  }
  template <class T>
  void opt(const char* key, T& out) {
    if (!error_->empty()) return;
    auto it = in_.find(key);
    if (it == in_.end() || it->value().isNone()) return;
    if constexpr (IsOptional<T>::value) {
      typename T::value_type v{};
      read(it->value(), prefix_ + key, v);
      if (error_->empty()) out = std::move(v);
    } else {
      read(it->value(), prefix_ + key, out);
    }
  }
  template <class T>
  void lax(const char* key, T& out) {
    opt(key, out);
  }

 private:
  void fail(const std::string& field, const IValue& v, const char* expected) {
    if (error_->empty()) *error_ = field + " is a " + v.tagKind() + ", not " + expected;
  }

  bool readBytes(const IValue& v, const std::string& field, Bytes& out) {
    if (!v.isTensor() || v.toTensor().scalar_type() != torch::kUInt8 || v.toTensor().dim() != 1) {
      if (error_->empty()) *error_ = field + " is not a 1-d uint8 tensor";
      return false;
    }
    const auto t = v.toTensor().contiguous();
    out.data.assign(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
    return true;
  }

  template <class T>
  void read(const IValue& v, const std::string& field, T& out) {
    if constexpr (std::is_same_v<T, Bytes>) {
      readBytes(v, field, out);
    } else if constexpr (std::is_same_v<T, std::vector<Bytes>>) {
      if (!v.isList()) return fail(field, v, "a list");
      out.clear();
      const auto list = v.toListRef();
      for (std::size_t i = 0; i < list.size(); ++i) {
        Bytes b;
        if (!readBytes(list[i], field + "." + std::to_string(i), b)) return;
        out.push_back(std::move(b));
      }
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>> ||
                         std::is_same_v<T, std::vector<std::int64_t>>) {
      if (!v.isList()) return fail(field, v, "a list");
      out.clear();
      const auto list = v.toListRef();
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].isInt()) return fail(field + "." + std::to_string(i), list[i], "an int");
        out.push_back(static_cast<typename T::value_type>(list[i].toInt()));
      }
    } else if constexpr (requires { protocol::decodeJsonText(std::string_view(), out.value); }) {
      if (!v.isString()) return fail(field, v, "a str");
      if (Status s = protocol::decodeJsonText(v.toStringRef(), out.value); !s) {
        if (error_->empty()) *error_ = field + ": " + s.message();
      }
    } else if constexpr (Described<T>) {
      if (!v.isGenericDict()) return fail(field, v, "a dict");
      IValueReader r(v.toGenericDict(), field + ".", error_);
      describe(r, out);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.isString()) return fail(field, v, "a str");
      out = v.toStringRef();
    } else if constexpr (std::is_same_v<T, double>) {
      if (!v.isDouble() && !v.isInt()) return fail(field, v, "a number");
      out = v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.isBool()) return fail(field, v, "a bool");
      out = v.toBool();
    } else {
      static_assert(std::is_same_v<T, std::int64_t>, "a field type the pickle walker does not know");
      if (!v.isInt()) return fail(field, v, "an int");
      out = v.toInt();
    }
  }

  GDict in_;  // a handle: toGenericDict() returns one by value
  std::string prefix_;
  std::string* error_;
};

}  // namespace

IValue resumeToIValue(const protocol::ResumeRecord& record) {
  GDict d(c10::StringType::get(), c10::AnyType::get());
  IValueWriter w(&d);
  describe(w, const_cast<protocol::ResumeRecord&>(record));
  return d;
}

protocol::StatusOr<protocol::ResumeRecord> resumeFromIValue(const IValue& value) {
  if (!value.isGenericDict())
    return Status::corruption("flamingo_studio is a " + value.tagKind() + ", not a dict");
  protocol::ResumeRecord record;
  std::string error;
  IValueReader r(value.toGenericDict(), "flamingo_studio.", &error);
  describe(r, record);
  if (!error.empty()) return Status::corruption(error);
  if (Status s = protocol::checkResumeRecord(record); !s)
    return s.withMessage("flamingo_studio: " + s.message());
  return record;
}

}  // namespace fs::engine

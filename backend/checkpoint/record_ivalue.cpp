#include "backend/checkpoint/record_ivalue.h"

#include <torch/torch.h>

#include <concepts>
#include <type_traits>

#include "backend/protocol/wire/pickled_record_reader.h"

namespace fs::checkpoint {
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
    if constexpr (protocol::kIsOptional<T>) {
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

// The pickled values as LibTorch unpickled them (protocol/wire/pickled_record_reader.h).
struct IValueAdapter {
  using Value = IValue;
  static const IValue* find(const IValue& v, const char* key) {
    if (!v.isGenericDict()) return nullptr;
    const GDict d = v.toGenericDict();  // a handle: the entries live in `v`
    auto it = d.find(key);
    return it == d.end() ? nullptr : &it->value();
  }
  static bool isNone(const IValue& v) { return v.isNone(); }
  static bool isDict(const IValue& v) { return v.isGenericDict(); }
  static bool isStr(const IValue& v) { return v.isString(); }
  static bool isList(const IValue& v) { return v.isList(); }
  static std::string typeName(const IValue& v) { return v.tagKind(); }
  static std::optional<int64_t> asInt(const IValue& v) {
    return v.isInt() ? std::optional<int64_t>(v.toInt()) : std::nullopt;
  }
  static std::optional<double> asNumber(const IValue& v) {
    if (v.isDouble()) return v.toDouble();
    if (v.isInt()) return static_cast<double>(v.toInt());
    return std::nullopt;
  }
  static std::optional<bool> asBool(const IValue& v) {
    return v.isBool() ? std::optional<bool>(v.toBool()) : std::nullopt;
  }
  static const std::string& str(const IValue& v) { return v.toStringRef(); }
  static std::size_t size(const IValue& v) { return v.toListRef().size(); }
  static const IValue& item(const IValue& v, std::size_t i) { return v.toListRef()[i]; }
  static Status bytes(const IValue& v, const std::string& field, Bytes& out) {
    if (!v.isTensor() || v.toTensor().scalar_type() != torch::kUInt8 || v.toTensor().dim() != 1)
      return Status::corruption(field + " is not a 1-d uint8 tensor");
    const auto t = v.toTensor().contiguous();
    out.data.assign(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
    return Status::ok();
  }
};

}  // namespace

IValue resumeToIValue(const protocol::ResumeRecord& record) {
  GDict d(c10::StringType::get(), c10::AnyType::get());
  IValueWriter w(&d);
  describe(w, const_cast<protocol::ResumeRecord&>(record));
  return d;
}

protocol::StatusOr<protocol::ResumeRecord> resumeFromIValue(const IValue& value) {
  IValueAdapter adapter;
  return protocol::readPickledResumeRecord(adapter, value);
}

}  // namespace fs::checkpoint

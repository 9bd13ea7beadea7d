#include "backend/inspect/record_pyvalue.h"

#include <optional>
#include <type_traits>

namespace fs::inspect {
namespace {

using protocol::Bytes;
using protocol::Status;
using tensorfile::PyValue;

class PyValueReader;
template <class T>
concept Described = requires(PyValueReader& r, T& t) {
  describe(r, t);
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

class PyValueReader {
 public:
  PyValueReader(const PyValue& in, std::string prefix, std::string* error, const TensorBytes& tensorBytes)
      : in_(in), prefix_(std::move(prefix)), error_(error), tensorBytes_(tensorBytes) {}

  template <class T>
  void req(const char* key, T& out) {
    if (!error_->empty()) return;
    const PyValue* v = in_.find(key);
    if (!v) {
      *error_ = prefix_ + key + " is missing";
      return;
    }
    read(*v, prefix_ + key, out);
  }
  template <class T>
  void opt(const char* key, T& out) {
    if (!error_->empty()) return;
    const PyValue* v = in_.find(key);
    if (!v || v->isNone()) return;
    if constexpr (IsOptional<T>::value) {
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
  void fail(const std::string& field, const PyValue& v, const char* expected) {
    if (error_->empty()) *error_ = field + " is a " + v.typeName() + ", not " + expected;
  }

  bool readBytes(const PyValue& v, const std::string& field, Bytes& out) {
    if (!v.isTensor()) {
      fail(field, v, "a uint8 tensor");
      return false;
    }
    auto bytes = tensorBytes_(field);
    if (!bytes) {
      if (error_->empty()) *error_ = field + ": " + bytes.status().message();
      return false;
    }
    out.data = std::move(bytes.value());
    return true;
  }

  template <class T>
  void read(const PyValue& v, const std::string& field, T& out) {
    if constexpr (std::is_same_v<T, Bytes>) {
      readBytes(v, field, out);
    } else if constexpr (std::is_same_v<T, std::vector<Bytes>>) {
      if (!v.isSequence()) return fail(field, v, "a list");
      out.clear();
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        Bytes b;
        if (!readBytes(*v.items[i], field + "." + std::to_string(i), b)) return;
        out.push_back(std::move(b));
      }
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>> ||
                         std::is_same_v<T, std::vector<std::int64_t>>) {
      if (!v.isSequence()) return fail(field, v, "a list");
      out.clear();
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        const PyValue& item = *v.items[i];
        if (item.kind != tensorfile::PyKind::kInt)
          return fail(field + "." + std::to_string(i), item, "an int");
        out.push_back(static_cast<typename T::value_type>(item.intValue));
      }
    } else if constexpr (requires { protocol::decodeJsonText(std::string_view(), out.value); }) {
      if (!v.isStr()) return fail(field, v, "a str");
      if (Status s = protocol::decodeJsonText(v.text, out.value); !s) {
        if (error_->empty()) *error_ = field + ": " + s.message();
      }
    } else if constexpr (Described<T>) {
      if (!v.isDict()) return fail(field, v, "a dict");
      PyValueReader r(v, field + ".", error_, tensorBytes_);
      describe(r, out);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.isStr()) return fail(field, v, "a str");
      out = v.text;
    } else if constexpr (std::is_same_v<T, double>) {
      const auto d = v.asDouble();
      if (!d || v.kind == tensorfile::PyKind::kBool) return fail(field, v, "a number");
      out = *d;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v.kind != tensorfile::PyKind::kBool) return fail(field, v, "a bool");
      out = v.boolValue;
    } else {
      static_assert(std::is_same_v<T, std::int64_t>, "a field type the pickle walker does not know");
      if (v.kind != tensorfile::PyKind::kInt) return fail(field, v, "an int");
      out = v.intValue;
    }
  }

  const PyValue& in_;
  std::string prefix_;
  std::string* error_;
  const TensorBytes& tensorBytes_;
};

}  // namespace

protocol::StatusOr<protocol::ResumeRecord> resumeFromPyValue(const PyValue& value,
                                                             const TensorBytes& tensorBytes) {
  if (!value.isDict()) return Status::corruption("flamingo_studio is a " + value.typeName() + ", not a dict");
  protocol::ResumeRecord record;
  std::string error;
  PyValueReader r(value, "flamingo_studio.", &error, tensorBytes);
  describe(r, record);
  if (!error.empty()) return Status::corruption(error);
  if (Status s = protocol::checkResumeRecord(record); !s)
    return s.withMessage("flamingo_studio: " + s.message());
  return record;
}

}  // namespace fs::inspect

#include "backend/inspect/record_pyvalue.h"

#include "backend/protocol/wire/pickled_record_reader.h"

namespace fs::inspect {
namespace {

using protocol::Bytes;
using protocol::Status;
using tensorfile::PyKind;
using tensorfile::PyValue;

// The pickled values as tensorfile's reader holds them (protocol/wire/pickled_record_reader.h);
// a tensor's bytes come from the file through `tensorBytes`.
struct PyValueAdapter {
  using Value = PyValue;
  const TensorBytes& tensorBytes;

  static const PyValue* find(const PyValue& v, const char* key) { return v.find(key); }
  static bool isNone(const PyValue& v) { return v.isNone(); }
  static bool isDict(const PyValue& v) { return v.isDict(); }
  static bool isStr(const PyValue& v) { return v.isStr(); }
  static bool isList(const PyValue& v) { return v.isSequence(); }
  static std::string typeName(const PyValue& v) { return v.typeName(); }
  static std::optional<std::int64_t> asInt(const PyValue& v) {
    return v.kind == PyKind::kInt ? std::optional<std::int64_t>(v.intValue) : std::nullopt;
  }
  static std::optional<double> asNumber(const PyValue& v) {
    return v.kind == PyKind::kBool ? std::nullopt : v.asDouble();
  }
  static std::optional<bool> asBool(const PyValue& v) {
    return v.kind == PyKind::kBool ? std::optional<bool>(v.boolValue) : std::nullopt;
  }
  static const std::string& str(const PyValue& v) { return v.text; }
  static std::size_t size(const PyValue& v) { return v.items.size(); }
  static const PyValue& item(const PyValue& v, std::size_t i) { return *v.items[i]; }
  Status bytes(const PyValue& v, const std::string& field, Bytes& out) const {
    if (!v.isTensor()) return Status::corruption(field + " is a " + v.typeName() + ", not a uint8 tensor");
    auto read = tensorBytes(field);
    if (!read) return Status::corruption(field + ": " + read.status().message());
    out.data = std::move(read.value());
    return Status::ok();
  }
};

}  // namespace

protocol::StatusOr<protocol::ResumeRecord> resumeFromPyValue(const PyValue& value,
                                                             const TensorBytes& tensorBytes) {
  PyValueAdapter adapter{tensorBytes};
  return protocol::readPickledResumeRecord(adapter, value);
}

}  // namespace fs::inspect

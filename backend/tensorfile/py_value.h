// The value tree an unpickled torch.save file becomes.
//
// A PyValue is what Python would have built, without running any code: plain
// data (None, bool, int, float, str, bytes, list, tuple, dict, set), torch
// values we recognise (tensors, storages, devices, dtypes) and, for any other
// class, an Object holding the class name and the arguments and state it was
// pickled with. Dicts keep insertion order and keys of any value type
// (optimizer state dicts use int keys).
//
// Ownership: nodes are shared (the pickle memo lets one object appear in many
// places; two tensors may share a storage) and immutable once the reader
// returns them. The reader guarantees the graph is acyclic and at most
// kMaxPyDepth deep. Thread-safety: const access from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/tensorfile/tensor_view.h"

namespace fs::tensorfile {

inline constexpr int kMaxPyDepth = 256;

enum class PyKind {
  kNone,
  kBool,
  kInt,     // fits in int64: intValue
  kBigInt,  // does not: text holds the decimal digits ("-123...")
  kFloat,
  kStr,        // text, UTF-8
  kBytes,      // text, raw bytes (bytes, bytearray, _codecs.encode)
  kList,       // items
  kTuple,      // items (torch.Size too)
  kDict,       // entries; ordered == collections.OrderedDict; state = attributes (OrderedDict._metadata)
  kSet,        // items
  kFrozenSet,  // items
  kGlobal,     // a class or function reference not called: text "module.name"
  kObject,     // an instance of a class we do not model: see PyValue::object
  kTensor,     // tensor (also nn.Parameter: tensor->isParameter)
  kStorage,    // a bare storage (persistent id not wrapped in a tensor)
  kDevice,     // text "cpu", "cuda:0"
  kDtype,      // text "torch.float32"
};
std::string_view kindName(PyKind kind);

struct PyValue;
using PyValuePtr = std::shared_ptr<PyValue>;

// How an instance of an unknown class was pickled: className(*args, **kwargs),
// then the list/dict items pickle appended to it, then BUILD(state).
struct PyObjectData {
  std::vector<PyValuePtr> args;
  PyValuePtr kwargs;                                         // NEWOBJ_EX only; may be null
  std::vector<PyValuePtr> listItems;                         // APPEND(S) on the object
  std::vector<std::pair<PyValuePtr, PyValuePtr>> dictItems;  // SETITEM(S) on the object
};

struct StorageRef {
  std::string key;    // record "<archive>/data/<key>"
  std::string entry;  // the record's full name
  std::string location;
  DType dtype = DType::kUInt8;
  std::int64_t numel = 0;
  std::uint64_t fileOffset = 0;
  std::uint64_t byteSize = 0;
  bool readable = true;
};

struct PyValue {
  PyKind kind = PyKind::kNone;
  bool boolValue = false;
  std::int64_t intValue = 0;
  double floatValue = 0;
  std::string text;      // see PyKind; kObject: class name "module.name"
  bool ordered = false;  // kDict: collections.OrderedDict
  std::vector<PyValuePtr> items;
  std::vector<std::pair<PyValuePtr, PyValuePtr>> entries;
  PyValuePtr state;                      // kObject / kDict: BUILD state; may be null
  std::shared_ptr<PyObjectData> object;  // kObject
  std::shared_ptr<TensorRef> tensor;     // kTensor
  std::shared_ptr<StorageRef> storage;   // kStorage
  // Scratch space of the reader (its acyclicity and depth check); meaningless to callers.
  std::int32_t readerScratch = 0;

  static PyValuePtr make(PyKind kind);
  static PyValuePtr makeInt(std::int64_t v);
  static PyValuePtr makeStr(std::string s, PyKind kind = PyKind::kStr);

  bool isNone() const { return kind == PyKind::kNone; }
  bool isDict() const { return kind == PyKind::kDict; }
  bool isStr() const { return kind == PyKind::kStr; }
  bool isTensor() const { return kind == PyKind::kTensor; }
  bool isSequence() const { return kind == PyKind::kList || kind == PyKind::kTuple; }
  // int or bool as an int64 (Python's int(True) == 1).
  std::optional<std::int64_t> asInt() const;
  // int, bool or float as a double.
  std::optional<double> asDouble() const;
  // The value of a dict entry whose key is the str `key`; nullptr if absent or not a dict.
  // Linear in the dict's size: for many lookups use flattenTensors() or WeightSet.
  const PyValue* find(std::string_view key) const;
  // "dict", "collections.OrderedDict", "list", "torch.Tensor", the class name of an Object, ...
  std::string typeName() const;
};

// A short, Python-like rendering for logs and tooltips: containers beyond
// `maxItems` elements and nesting beyond `maxDepth` are elided with "...".
std::string toDebugString(const PyValue& value, int maxDepth = 4, std::size_t maxItems = 8);
// A dict key as text: str as is, int in decimal, others via toDebugString.
std::string keyToString(const PyValue& key);

}  // namespace fs::tensorfile

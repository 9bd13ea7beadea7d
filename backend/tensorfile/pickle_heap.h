// Internal to the unpickler: the node factory and Python container semantics
// (dict keys compared by value, set de-duplication), the work budget, error
// messages with the current position, storage record caching, and the final
// acyclicity / depth check. Not part of the public API.
//
// Ownership: the heap tracks every node it made; unless finish() succeeded,
// its destructor clears every node's children so that cyclic garbage a
// hostile pickle built is freed (shared_ptr cycles would leak otherwise).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/tensorfile/pickle_reader.h"

namespace fs::tensorfile::detail {

class PickleHeap {
 public:
  PickleHeap(const PickleOptions& options, std::uint64_t inputSize);
  ~PickleHeap();
  PickleHeap(const PickleHeap&) = delete;
  PickleHeap& operator=(const PickleHeap&) = delete;

  PyValuePtr node(PyKind kind);
  PyValuePtr none() const { return none_; }
  PyValuePtr boolean(bool b) const { return b ? true_ : false_; }

  // dict[key] = value (a key equal to an existing one replaces its value).
  Status setItem(PyValue& dict, PyValuePtr key, PyValuePtr value);
  // set.add(item).
  Status addItem(PyValue& set, PyValuePtr item);

  Status charge(std::uint64_t units);
  void at(std::uint64_t position, std::string_view opcode) {
    position_ = position;
    opcode_ = opcode;
  }
  Status corrupt(const std::string& msg) const;
  Status unsupported(const std::string& msg) const;
  const std::string& source() const { return options_.sourceName; }

  // The record of storage `key`, resolved once.
  StatusOr<StorageRecord> storageRecord(const std::string& key);

  // Checks that everything reachable from root is acyclic and at most
  // kMaxPyDepth deep; on success the nodes are released to the caller.
  Status finish(const PyValuePtr& root);

 private:
  // Appends an identity or value key for hashing; false for unhashable values.
  bool hashKey(const PyValue& v, int depth, std::string& out) const;
  Status indexKey(const PyValue& key, std::string& out);

  const PickleOptions& options_;
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
  std::uint64_t position_ = 0;
  std::string_view opcode_;
  PyValuePtr none_, true_, false_;
  std::vector<PyValuePtr> nodes_;
  std::unordered_map<const PyValue*, std::unordered_map<std::string, std::size_t>> index_;
  std::unordered_map<std::string, StorageRecord> storages_;
  bool finished_ = false;
};

}  // namespace fs::tensorfile::detail

#include "backend/tensorfile/pickle_heap.h"

#include <bit>
#include <cmath>

namespace fs::tensorfile::detail {
namespace {

constexpr std::size_t kMaxValueKeyBytes = 256;  // longer str/bytes keys hash by identity
constexpr int kMaxKeyDepth = 8;

template <class F>
void forEachChild(const PyValue& v, F&& f) {
  for (const auto& c : v.items) f(c.get());
  for (const auto& [k, val] : v.entries) {
    f(k.get());
    f(val.get());
  }
  if (v.state) f(v.state.get());
  if (v.object) {
    for (const auto& c : v.object->args) f(c.get());
    if (v.object->kwargs) f(v.object->kwargs.get());
    for (const auto& c : v.object->listItems) f(c.get());
    for (const auto& [k, val] : v.object->dictItems) {
      f(k.get());
      f(val.get());
    }
  }
}

void clearChildren(PyValue& v) {
  v.items.clear();
  v.entries.clear();
  v.state.reset();
  v.object.reset();
}

}  // namespace

PickleHeap::PickleHeap(const PickleOptions& options, std::uint64_t inputSize)
    : options_(options),
      budget_(options.workBudget ? options.workBudget : inputSize * 16 + (std::uint64_t{1} << 22)),
      none_(PyValue::make(PyKind::kNone)),
      true_(PyValue::make(PyKind::kBool)),
      false_(PyValue::make(PyKind::kBool)) {
  true_->boolValue = true;
}

PickleHeap::~PickleHeap() {
  if (!finished_) {
    // Every node is still held by nodes_, so clearing never frees a chain recursively.
    for (auto& n : nodes_) clearChildren(*n);
  }
}

PyValuePtr PickleHeap::node(PyKind kind) {
  nodes_.push_back(PyValue::make(kind));
  return nodes_.back();
}

Status PickleHeap::charge(std::uint64_t units) {
  used_ += units;
  if (used_ > budget_) {
    return corrupt("the pickle does more work than its size allows (" + std::to_string(budget_) +
                   " units); rejected as a decompression bomb");
  }
  return Status::ok();
}

Status PickleHeap::corrupt(const std::string& msg) const {
  return Status::corruption(options_.sourceName + ": byte " + std::to_string(position_) + " (" +
                            std::string(opcode_) + "): " + msg);
}

Status PickleHeap::unsupported(const std::string& msg) const {
  return Status::unsupported(options_.sourceName + ": byte " + std::to_string(position_) + " (" +
                             std::string(opcode_) + "): " + msg);
}

bool PickleHeap::hashKey(const PyValue& v, int depth, std::string& out) const {
  auto identity = [&] {
    out += 'p' + std::to_string(reinterpret_cast<std::uintptr_t>(&v)) + ';';
    return true;
  };
  switch (v.kind) {
    case PyKind::kNone:
      out += "N;";
      break;
    case PyKind::kBool:
      out += v.boolValue ? "i1;" : "i0;";
      break;
    case PyKind::kInt:
      out += 'i' + std::to_string(v.intValue) + ';';
      break;
    case PyKind::kBigInt:
      out += 'i' + v.text + ';';
      break;
    case PyKind::kFloat: {
      const double d = v.floatValue;
      if (std::isnan(d)) return identity();
      if (d == std::trunc(d) && std::fabs(d) < 9.2e18) {
        out += 'i' + std::to_string(static_cast<std::int64_t>(d)) + ';';  // 1.0 == 1 == True in Python
      } else {
        out += 'f' + std::to_string(std::bit_cast<std::uint64_t>(d)) + ';';
      }
      break;
    }
    case PyKind::kStr:
    case PyKind::kBytes:
      if (v.text.size() > kMaxValueKeyBytes) return identity();
      out += (v.kind == PyKind::kStr ? 's' : 'b') + std::to_string(v.text.size()) + ':' + v.text;
      break;
    case PyKind::kTuple:
      if (depth >= kMaxKeyDepth || v.items.size() > 64) return identity();
      out += "t(";
      for (const auto& item : v.items) {
        if (!hashKey(*item, depth + 1, out)) return false;
      }
      out += ')';
      break;
    case PyKind::kGlobal:
    case PyKind::kDevice:
    case PyKind::kDtype:
      out += 'g' + v.text + ';';
      break;
    case PyKind::kList:
    case PyKind::kDict:
    case PyKind::kSet:
      return false;
    default:
      return identity();  // frozenset, objects, tensors, storages: hashed by identity
  }
  return true;
}

Status PickleHeap::indexKey(const PyValue& key, std::string& out) {
  if (!hashKey(key, 0, out)) return corrupt("unhashable key of type " + std::string(kindName(key.kind)));
  return charge(out.size() / 16 + 4);  // hashing and a map insert cost several units
}

Status PickleHeap::setItem(PyValue& dict, PyValuePtr key, PyValuePtr value) {
  if (dict.kind == PyKind::kObject && dict.object) {
    dict.object->dictItems.emplace_back(std::move(key), std::move(value));
    return charge(1);
  }
  if (dict.kind != PyKind::kDict) {
    return corrupt("cannot set an item on a " + std::string(kindName(dict.kind)) + "; expected a dict");
  }
  std::string h;
  if (Status st = indexKey(*key, h); !st) return st;
  auto& idx = index_[&dict];
  auto [it, inserted] = idx.emplace(std::move(h), dict.entries.size());
  if (inserted) {
    dict.entries.emplace_back(std::move(key), std::move(value));
  } else {
    dict.entries[it->second].second = std::move(value);
  }
  return Status::ok();
}

Status PickleHeap::addItem(PyValue& set, PyValuePtr item) {
  if (set.kind == PyKind::kObject && set.object) {
    set.object->listItems.push_back(std::move(item));
    return charge(1);
  }
  if (set.kind != PyKind::kSet && set.kind != PyKind::kFrozenSet) {
    return corrupt("cannot add an item to a " + std::string(kindName(set.kind)) + "; expected a set");
  }
  std::string h;
  if (Status st = indexKey(*item, h); !st) return st;
  if (index_[&set].emplace(std::move(h), set.items.size()).second) set.items.push_back(std::move(item));
  return Status::ok();
}

StatusOr<StorageRecord> PickleHeap::storageRecord(const std::string& key) {
  if (auto it = storages_.find(key); it != storages_.end()) return it->second;
  StorageRecord record;
  if (options_.resolveStorage) {
    auto resolved = options_.resolveStorage(key);
    if (!resolved) return resolved.status();
    record = std::move(resolved.value());
  } else {
    record.entry = key;
    record.readable = false;
  }
  storages_.emplace(key, record);
  return record;
}

Status PickleHeap::finish(const PyValuePtr& root) {
  // Iterative DFS. readerScratch: 0 unvisited, -1 on the current path, h > 0 height.
  struct Frame {
    PyValue* v;
    std::vector<PyValue*> kids;
    std::size_t next = 0;
    int maxKid = 0;
  };
  std::vector<Frame> path;
  auto tooDeep = [&] {
    return corrupt("values nest deeper than " + std::to_string(kMaxPyDepth) + " levels");
  };
  auto push = [&](PyValue* v) {
    Frame f{v, {}, 0, 0};
    forEachChild(*v, [&](const PyValue* c) { f.kids.push_back(const_cast<PyValue*>(c)); });
    v->readerScratch = -1;
    path.push_back(std::move(f));
  };
  push(root.get());
  while (!path.empty()) {
    Frame& f = path.back();
    if (f.next == f.kids.size()) {
      const int h = f.maxKid + 1;
      f.v->readerScratch = h;
      path.pop_back();
      if (!path.empty()) path.back().maxKid = std::max(path.back().maxKid, h);
      continue;
    }
    PyValue* c = f.kids[f.next++];
    const int seen = c->readerScratch;
    if (seen == 0) {
      if (path.size() >= static_cast<std::size_t>(kMaxPyDepth)) return tooDeep();
      push(c);
    } else if (seen < 0) {
      return corrupt("the value graph has a cycle (a container holds itself); torch.save never writes one");
    } else {
      if (path.size() + static_cast<std::size_t>(seen) > static_cast<std::size_t>(kMaxPyDepth))
        return tooDeep();
      f.maxKid = std::max(f.maxKid, seen);
    }
  }
  // Unreachable nodes are garbage; clear them so any cycles among them are freed.
  for (auto& n : nodes_) {
    if (n->readerScratch == 0) clearChildren(*n);
  }
  index_.clear();
  nodes_.clear();
  finished_ = true;
  return Status::ok();
}

}  // namespace fs::tensorfile::detail

#include "backend/tensorfile/state_dict.h"

#include <array>
#include <string_view>

namespace fs::tensorfile {
namespace {

struct Walker {
  const FlattenOptions& options;
  std::vector<NamedTensor>& out;
  std::uint64_t visits = 0;

  Status walk(const PyValue& v, const std::string& name, int depth) {
    if (++visits > options.maxVisits) {
      return Status::invalidArgument("flattening visited more than " + std::to_string(options.maxVisits) +
                                     " values (a shared subtree referenced too often?)");
    }
    if (depth > kMaxPyDepth)
      return Status::invalidArgument("values nest deeper than " + std::to_string(kMaxPyDepth));
    const auto child = [&](const std::string& component) {
      return name.empty() ? component : name + "." + component;
    };
    switch (v.kind) {
      case PyKind::kTensor:
        out.push_back({name, v.tensor});
        return Status::ok();
      case PyKind::kDict:
        for (const auto& [k, val] : v.entries) {
          if (Status st = walk(*val, child(keyToString(*k)), depth + 1); !st) return st;
        }
        return Status::ok();
      case PyKind::kList:
      case PyKind::kTuple:
        if (!options.includeSequences) return Status::ok();
        for (std::size_t i = 0; i < v.items.size(); ++i) {
          if (Status st = walk(*v.items[i], child(std::to_string(i)), depth + 1); !st) return st;
        }
        return Status::ok();
      default:
        return Status::ok();
    }
  }
};

bool isNestedStateDict(const PyValue& v, int depth) {
  if (!v.isDict() || depth > 16) return false;
  bool anyTensor = false;
  for (const auto& [k, val] : v.entries) {
    if (!k->isStr()) return false;
    if (val->isTensor()) {
      anyTensor = true;
    } else if (!isNestedStateDict(*val, depth + 1)) {
      return false;
    }
  }
  return anyTensor || v.entries.empty();
}

const PyValue* firstOf(const PyValue& root, std::initializer_list<std::string_view> keys,
                       std::string* which) {
  for (std::string_view k : keys) {
    if (const PyValue* v = root.find(k); v && v->isDict()) {
      if (which) *which = std::string(k);
      return v;
    }
  }
  return nullptr;
}

}  // namespace

StatusOr<std::vector<NamedTensor>> flattenTensors(const PyValue& root, const FlattenOptions& options) {
  std::vector<NamedTensor> out;
  Walker walker{options, out};
  if (Status st = walker.walk(root, options.prefix, 0); !st) return st;
  return out;
}

bool isFlatStateDict(const PyValue& value) {
  if (!value.isDict()) return false;
  for (const auto& [k, v] : value.entries) {
    if (!k->isStr() || !v->isTensor()) return false;
  }
  return true;
}

CheckpointSections checkpointSections(const PyValue& root) {
  CheckpointSections s;
  if (!root.isDict()) return s;
  s.model = firstOf(root, {"model_state_dict", "state_dict", "model", "module"}, &s.modelKey);
  s.optimizer = firstOf(root, {"optimizer_state_dict", "optimizer"}, nullptr);
  s.scheduler = firstOf(root, {"lr_scheduler_state_dict", "scheduler", "lr_scheduler"}, nullptr);
  if (const PyValue* e = root.find("epoch")) s.epoch = e->asInt();
  if (!s.model && isNestedStateDict(root, 0)) {
    s.model = &root;
    s.modelKey.clear();
  }
  return s;
}

void stripPrefix(std::vector<NamedTensor>& tensors, const std::string& prefix) {
  if (prefix.empty()) return;
  for (auto& t : tensors) {
    if (t.name.starts_with(prefix)) t.name.erase(0, prefix.size());
  }
}

}  // namespace fs::tensorfile

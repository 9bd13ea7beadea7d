// Which parameters each unit of a ShardedModel holds: every parameter belongs
// to the innermost unit around it (units may nest, as in torch's FSDP), the
// rest to the root unit; within a unit, members are grouped by requires-grad
// setting and trainable group (one flat parameter each), in the model's
// parameter order.
//
// Thread-safety: a pure function of the model; the caller's thread.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/fsdp/flat_param.h"

namespace fs::fsdp {

struct UnitSpec {
  std::string path;  // module path in the model, e.g. "perceiver"
  std::shared_ptr<torch::nn::Module> module;
  bool justInTime = true;  // false: the model never announces it; gathered with the root
};

struct UnitMembers {
  // Per unit (the specs' order, then the root unit last): (trainable, group) -> members.
  std::vector<std::map<std::pair<bool, int>, std::vector<FlatMember>>> units;
  std::vector<std::string> order;  // every parameter's name once, in the model's order
};

// `trainableGroup` (may be null: group 0) keys the trainable members. Throws c10::Error naming a unit
// without a module, or two units (not nested) that share a parameter: tied parameters must be in one unit.
UnitMembers assignUnitMembers(torch::nn::Module& root, const std::vector<UnitSpec>& specs,
                              const std::function<int(const std::string& name)>& trainableGroup);

}  // namespace fs::fsdp

#include "backend/model/state_dict.h"

#include <torch/torch.h>

#include <unordered_map>

namespace fs::model {

LoadReport loadNamedTensors(const NamedTensors& params, const std::map<std::string, torch::Tensor>& source,
                            const KeyMapper& map) {
  std::vector<state_keys::NamedShape> ours;
  std::unordered_map<std::string, torch::Tensor> byName;
  for (const auto& [name, tensor] : params) {
    ours.push_back({name, tensor.sizes().vec()});
    byName.emplace(name, tensor);
  }
  std::vector<state_keys::NamedShape> keys;
  for (const auto& [key, tensor] : source) keys.push_back({key, tensor.sizes().vec()});
  auto classified = state_keys::classifyKeys(ours, keys, map);
  torch::NoGradGuard no_grad;
  for (const auto& [key, name] : classified.copies) byName.at(name).copy_(source.at(key));
  return std::move(classified.report);
}

}  // namespace fs::model

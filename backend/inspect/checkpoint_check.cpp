#include "backend/inspect/checkpoint_check.h"

#include <set>

namespace fs::inspect {

state_keys::LoadReport checkCheckpointKeys(const CheckpointIndex& checkpoint,
                                           const std::vector<OurParameter>& ours,
                                           const state_keys::KeyMapper& map) {
  std::vector<state_keys::NamedShape> params;
  std::set<std::string> frozen;
  for (const auto& p : ours) {
    params.push_back({p.name, p.shape});
    if (!p.trainable) frozen.insert(p.name);
  }
  std::vector<state_keys::NamedShape> source;
  for (const auto& t : checkpoint.tensors()) {
    if (t.section == Section::kModel) source.push_back({t.name, t.shape});
  }
  auto report = state_keys::classifyKeys(params, source, map).report;
  report.markExpectedFrozen([&](const std::string& name) { return frozen.count(name) != 0; });
  return report;
}

}  // namespace fs::inspect

#include "backend/trainer/layout_event.h"

#include <algorithm>

namespace fs::trainer {

std::string dtypeName(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return "float32";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::Double:
      return "float64";
    default:
      return c10::toString(t);
  }
}

// One rule for the layout event and for the memory event's gathered_at_peak.
std::vector<int> layoutPositions(const fsdp::ShardedModel& sharded) {
  const auto& units = sharded.units();
  std::vector<int> at(units.size(), -1);
  int next = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    const size_t i = (k + units.size() - 1) % units.size();  // the root (last) first
    if (!units[i].flats.empty()) at[i] = next++;
  }
  return at;
}

int layoutUnitCount(const fsdp::ShardedModel* sharded) {
  if (!sharded) return 0;
  const auto at = layoutPositions(*sharded);
  return static_cast<int>(std::count_if(at.begin(), at.end(), [](int p) { return p >= 0; }));
}

protocol::LayoutEvent layoutEvent(model::FlamingoImpl& model, const fsdp::ShardedModel* sharded,
                                  int64_t maxUnitsGathered, int64_t world) {
  if (!sharded) {
    // Without FSDP one unit: the whole model on every rank.
    protocol::LayoutUnit unit;
    unit.path = "";
    for (const auto& [name, t] : model.namedParameters()) {
      unit.param_count += t.numel();
      if (!t.requires_grad()) unit.frozen_params += t.numel();
      unit.dtype = dtypeName(t.scalar_type());
    }
    unit.trainable = unit.frozen_params < unit.param_count;
    unit.shard_bytes.assign(static_cast<size_t>(world), unit.param_count * 4);
    return protocol::LayoutEvent{{unit}, 0};
  }
  protocol::LayoutEvent e;
  e.max_units_gathered = static_cast<int>(maxUnitsGathered);
  // The root is gathered first and held throughout (NOTE [Gather order] in fsdp_plan/layout.h).
  const auto& units = sharded->units();
  const auto at = layoutPositions(*sharded);
  e.units.resize(static_cast<size_t>(std::count_if(at.begin(), at.end(), [](int p) { return p >= 0; })));
  for (size_t i = 0; i < units.size(); ++i) {
    const auto& u = units[i];
    if (at[i] < 0) continue;
    protocol::LayoutUnit& lu = e.units[static_cast<size_t>(at[i])];
    lu.path = u.module ? u.path : "";
    lu.gather_order = at[i];
    int64_t shardBytes = 0;
    for (const auto& f : u.flats) {
      lu.param_count += f->numel();
      if (!f->trainable()) lu.frozen_params += f->numel();
      lu.trainable = lu.trainable || f->trainable();
      lu.padding_elems += f->padding();
      shardBytes += f->shardBytes();
      if (lu.dtype.empty() || f->trainable()) lu.dtype = dtypeName(f->shard().scalar_type());
    }
    lu.shard_bytes.assign(static_cast<size_t>(world), shardBytes);
  }
  return e;
}

}  // namespace fs::trainer

#include "backend/data/data_position.h"

namespace fs::data {

protocol::Status checkResumable(const DataPosition& mine, const DataPosition& p, int64_t stepsPerEpoch) {
  using protocol::Status;
  if (p.source != mine.source) {
    return Status::invalidArgument("data position: written by a '" + p.source + "' source, not " +
                                   mine.source);
  }
  if (p.rank != mine.rank || p.world != mine.world) {
    return Status::invalidArgument("data position: saved on rank " + std::to_string(p.rank) + " of " +
                                   std::to_string(p.world) + ", restoring on rank " +
                                   std::to_string(mine.rank) + " of " + std::to_string(mine.world) +
                                   ": the data stream would differ");
  }
  if (p.datasets.size() != mine.datasets.size() || p.batchesConsumed.size() != mine.datasets.size()) {
    return Status::invalidArgument("data position: " + std::to_string(p.datasets.size()) +
                                   " datasets saved, the config has " + std::to_string(mine.datasets.size()));
  }
  for (size_t i = 0; i < mine.datasets.size(); ++i) {
    if (p.datasets[i] != mine.datasets[i]) {
      return Status::invalidArgument("data position: dataset " + std::to_string(i) + " was '" +
                                     p.datasets[i] + "', the config has '" + mine.datasets[i] + "'");
    }
    if (p.batchesConsumed[i] < 0 || p.batchesConsumed[i] > stepsPerEpoch) {
      return Status::invalidArgument("data position: " + std::to_string(p.batchesConsumed[i]) +
                                     " batches of '" + p.datasets[i] + "' consumed, but an epoch has " +
                                     std::to_string(stepsPerEpoch));
    }
  }
  if (p.epoch < 0) return Status::invalidArgument("data position: negative epoch");
  return Status::ok();
}

}  // namespace fs::data

#include "backend/data/data_source.h"

#include <algorithm>

#include "backend/protocol/config/derived.h"

namespace fs::data {

std::vector<DatasetInfo> datasetInfos(const protocol::RunConfig& config, int64_t world) {
  // Figures for this world size, whatever the launch section says.
  protocol::RunConfig sized = config;
  sized.launch.nnodes = 1;
  sized.launch.nproc_per_node = world;
  const protocol::DerivedFigures figures = protocol::deriveFigures(sized);
  std::vector<DatasetInfo> infos;
  for (size_t i = 0; i < config.data.datasets.size(); ++i) {
    const auto& d = config.data.datasets[i];
    const auto kind = datasetKindFromString(d.type).value_or(DatasetKind::kLaion);
    infos.push_back(DatasetInfo{d.name, kind, d.batch_size, protocol::resolvedMaxTokens(d),
                                kind == DatasetKind::kLaion ? 1 : std::max<int64_t>(1, d.max_num_images),
                                figures.datasets[i].batchesPerEpoch});
  }
  return infos;
}

}  // namespace fs::data

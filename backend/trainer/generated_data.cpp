#include "backend/trainer/generated_data.h"

#include <algorithm>
#include <fstream>

#include "backend/data/shardgen/synthetic_shards.h"

namespace fs::engine {

using protocol::Status;

protocol::StatusOr<protocol::RunConfig> prepareGeneratedData(const protocol::RunConfig& config,
                                                             const std::filesystem::path& runDir,
                                                             int64_t rank, int64_t world) {
  data::SyntheticShardOptions o;
  o.outDir = (runDir / "generated-data" / ("rank" + std::to_string(rank))).string();
  o.seed = static_cast<uint64_t>(config.seed);
  o.vocabSize = static_cast<size_t>(config.model.lm.vocab_size);
  o.laionShards = o.mmc4Shards = 0;
  for (const auto& d : config.data.datasets) {
    // Enough shards that every worker of every rank gets some; enough samples
    // for an epoch in one pass (MMC4 loses some documents to its rules).
    const int shards = static_cast<int>(std::max<int64_t>(4, std::max<int64_t>(1, d.workers) * world));
    const int64_t wanted = d.samples_per_epoch * (d.type == "mmc4" ? 2 : 1);
    const int perShard = static_cast<int>(std::clamp<int64_t>((wanted + shards - 1) / shards, 8, 4096));
    if (d.type == "mmc4") {
      o.mmc4Shards = shards;
      o.mmc4DocsPerShard = perShard;
      o.maxImagesPerDoc = static_cast<int>(std::max<int64_t>(1, d.max_num_images));
    } else {
      o.laionShards = shards;
      o.laionSamplesPerShard = perShard;
    }
  }
  const auto marker = std::filesystem::path(o.outDir) / "complete";
  data::SyntheticShardsSummary sum;
  std::ifstream in(marker);
  if (in >> sum.laionShards >> sum.mmc4Shards >> sum.tokenizerDir) {
    for (auto* pattern : {&sum.laionShards, &sum.mmc4Shards}) {
      if (*pattern == "-") pattern->clear();  // the marker's word for "none written"
    }
  } else {
    auto written = data::writeSyntheticShards(o);
    if (!written) return Status::ioError("data.source generated: " + written.status().message());
    sum = written.value();
    std::ofstream out(marker);
    out << (sum.laionShards.empty() ? "-" : sum.laionShards) << "\n"
        << (sum.mmc4Shards.empty() ? "-" : sum.mmc4Shards) << "\n"
        << sum.tokenizerDir << "\n";
    if (!out.flush()) return Status::ioError(marker.string() + ": write failed");
  }
  protocol::RunConfig out = config;
  out.data.source = "shards";
  out.model.lm.tokenizer_path = sum.tokenizerDir;
  out.model.lm.family = "opt";
  for (auto& d : out.data.datasets) d.shards = d.type == "mmc4" ? sum.mmc4Shards : sum.laionShards;
  return out;
}

}  // namespace fs::engine

#include "backend/trainer/generated_data.h"

#include <algorithm>
#include <fstream>

#include "backend/data/shardgen/synthetic_shards.h"

namespace fs::trainer {

using protocol::Status;

namespace {

// The marker of a complete copy: its format and the shard counts. The paths
// are not in it (see generated_data.h).
constexpr const char* kMarkerHeader = "flamingo-generated-data 2";

bool markerMatches(const std::filesystem::path& marker, const data::SyntheticShardOptions& o) {
  std::ifstream in(marker);
  std::string header, laion, mmc4;
  int laionCount = -1, mmc4Count = -1;
  if (!std::getline(in, header) || header != kMarkerHeader) return false;  // none, or an older format
  if (!(in >> laion >> laionCount >> mmc4 >> mmc4Count)) return false;
  return laion == "laion" && mmc4 == "mmc4" && laionCount == o.laionShards && mmc4Count == o.mmc4Shards;
}

}  // namespace

protocol::StatusOr<GeneratedData> prepareGeneratedData(const protocol::RunConfig& config,
                                                       const std::filesystem::path& runDir, int64_t rank,
                                                       int64_t world) {
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
  if (!markerMatches(marker, o)) {
    auto written = data::writeSyntheticShards(o);
    if (!written) return Status::ioError("data.source generated: " + written.status().message());
    std::ofstream out(marker);
    out << kMarkerHeader << "\nlaion " << o.laionShards << "\nmmc4 " << o.mmc4Shards << "\n";
    if (!out.flush()) return Status::ioError(marker.string() + ": write failed");
  }
  GeneratedData out;
  out.config = config;
  out.config.data.source = "shards";
  out.config.model.lm.tokenizer_path = (std::filesystem::path(o.outDir) / "tokenizer").string();
  out.config.model.lm.family = "opt";
  for (auto& d : out.config.data.datasets) {
    d.shards.clear();
    const bool mmc4 = d.type == "mmc4";
    out.shardFiles.push_back(
        data::syntheticShardFiles(o.outDir, mmc4 ? "mmc4" : "laion", mmc4 ? o.mmc4Shards : o.laionShards));
  }
  return out;
}

}  // namespace fs::trainer

#include "backend/trainer/generated_data.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "backend/data/shardgen/synthetic_shards.h"

namespace fs::trainer {

using protocol::Status;

namespace {

// The marker of a complete copy: its format and, per dataset, its type, shard
// count and samples per shard. The paths are not in it (see generated_data.h).
constexpr const char* kMarkerHeader = "flamingo-generated-data 3";

// The tokenizer's corpus whatever the dataset list: the tiny preset's own
// counts (64 LAION samples, 64 MMC4 documents of up to 2 pictures), so its
// tokenizer is the one both kinds written together give. NOTE [One tokenizer
// for every dataset list].
constexpr int kTokenizerLaionSamples = 64;
constexpr int kTokenizerMmc4Docs = 64;
constexpr int kTokenizerMaxImages = 2;  // the documents drawn for the corpus alone (no MMC4 dataset)

// One dataset's set: where it is written, and how much.
struct DatasetSet {
  std::string type;  // laion | mmc4
  std::filesystem::path dir;
  int shards = 0;
  int perShard = 0;
};

std::string markerText(const std::vector<DatasetSet>& sets) {
  std::string out = std::string(kMarkerHeader) + "\n";
  for (const auto& s : sets)
    out += s.type + " " + std::to_string(s.shards) + " " + std::to_string(s.perShard) + "\n";
  return out;
}

bool markerMatches(const std::filesystem::path& marker, const std::string& expected) {
  std::ifstream in(marker);
  std::stringstream text;
  text << in.rdbuf();
  return in && text.str() == expected;  // none, an older format or other counts: written again
}

}  // namespace

// NOTE [One tokenizer for every dataset list]
// The first LAION-type and the first MMC4-type dataset are written by one
// writeSyntheticShards call into the rank's directory, with the tokenizer; each
// further dataset (a second image-text set, say) gets its own set in
// extra<index>/ from its own seed (the run's seed plus its index), so no two
// datasets read the same samples. The tokenizer is trained on both kinds' text
// even when one kind is not configured: trained on LAION captions alone it
// has fewer merges than model.lm.vocab_size asks, and a LAION-only run was
// refused for it.

protocol::StatusOr<GeneratedData> prepareGeneratedData(const protocol::RunConfig& config,
                                                       const std::filesystem::path& runDir, int64_t rank,
                                                       int64_t world) {
  const std::filesystem::path base = runDir / "generated-data" / ("rank" + std::to_string(rank));
  std::vector<DatasetSet> sets;
  bool laionSeen = false, mmc4Seen = false;
  for (size_t i = 0; i < config.data.datasets.size(); ++i) {
    const auto& d = config.data.datasets[i];
    const bool mmc4 = d.type == "mmc4";
    bool& seen = mmc4 ? mmc4Seen : laionSeen;
    // Enough shards that every worker of every rank gets some; enough samples
    // for an epoch in one pass (MMC4 loses some documents to its rules).
    DatasetSet s;
    s.type = mmc4 ? "mmc4" : "laion";
    s.dir = seen ? base / ("extra" + std::to_string(i)) : base;
    s.shards = static_cast<int>(std::max<int64_t>(4, std::max<int64_t>(1, d.workers) * world));
    const int64_t wanted = d.samples_per_epoch * (mmc4 ? 2 : 1);
    s.perShard = static_cast<int>(std::clamp<int64_t>((wanted + s.shards - 1) / s.shards, 8, 4096));
    seen = true;
    sets.push_back(s);
  }
  const auto marker = base / "complete";
  const std::string expected = markerText(sets);
  if (!markerMatches(marker, expected)) {
    for (size_t i = 0; i < sets.size(); ++i) {
      const auto& s = sets[i];
      const bool first = s.dir == base;
      if (first && i > 0) continue;  // written with the first dataset, below
      data::SyntheticShardOptions o;
      o.outDir = s.dir.string();
      o.seed = static_cast<uint64_t>(config.seed) + (first ? 0 : i);
      o.vocabSize = static_cast<size_t>(config.model.lm.vocab_size);
      o.laionShards = o.mmc4Shards = 0;
      o.writeTokenizer = first;
      o.tokenizerLaionSamples = kTokenizerLaionSamples;
      o.tokenizerMmc4Docs = kTokenizerMmc4Docs;
      o.maxImagesPerDoc = kTokenizerMaxImages;
      for (size_t j = i; j < sets.size(); ++j) {
        const auto& t = sets[j];
        if (t.dir != s.dir) continue;
        if (t.type == "mmc4") {
          o.mmc4Shards = t.shards;
          o.mmc4DocsPerShard = t.perShard;
          o.maxImagesPerDoc = static_cast<int>(std::max<int64_t>(1, config.data.datasets[j].max_num_images));
        } else {
          o.laionShards = t.shards;
          o.laionSamplesPerShard = t.perShard;
        }
      }
      auto written = data::writeSyntheticShards(o);
      if (!written) return Status::ioError("data.source generated: " + written.status().message());
    }
    std::ofstream out(marker);
    out << expected;
    if (!out.flush()) return Status::ioError(marker.string() + ": write failed");
  }
  GeneratedData out;
  out.config = config;
  out.config.data.source = "shards";
  out.config.model.lm.tokenizer_path = (base / "tokenizer").string();
  out.config.model.lm.family = "opt";
  for (size_t i = 0; i < sets.size(); ++i) {
    out.config.data.datasets[i].shards.clear();
    out.shardFiles.push_back(data::syntheticShardFiles(sets[i].dir.string(), sets[i].type, sets[i].shards));
  }
  return out;
}

}  // namespace fs::trainer

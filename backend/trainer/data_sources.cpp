#include "backend/trainer/data_sources.h"

#include <string>
#include <vector>

#include "backend/data/synthetic_source.h"
#ifndef FS_NO_DATA_CODECS
#include "backend/data/shard_source.h"
#include "backend/trainer/generated_data.h"
#endif

namespace fs::trainer {

using protocol::Status;

namespace {

bool readsShards(const protocol::RunConfig& config) {
  return config.data.source == "shards" || config.data.source == "generated";
}

#ifndef FS_NO_DATA_CODECS
protocol::StatusOr<DataSources> makeShardSources(const protocol::RunConfig& config,
                                                 const std::filesystem::path& runDir, int64_t rank,
                                                 int64_t world) {
  DataSources out;
  protocol::RunConfig dataConfig = config;
  std::vector<std::vector<std::string>> shardFiles;  // data.source generated: read as files only
  if (config.data.source == "generated") {
    auto generated = prepareGeneratedData(config, runDir, rank, world);
    if (!generated) return generated.status();
    dataConfig = generated.value().config;
    shardFiles = generated.value().shardFiles;
  }
  const auto& lm = dataConfig.model.lm;
  if (lm.tokenizer_path.empty()) {
    return Status::invalidArgument("model.lm.tokenizer_path: empty; data.source=shards needs a tokenizer");
  }
  auto loaded = data::loadTokenizer(lm.tokenizer_path, lm.family);
  if (!loaded) return Status::invalidArgument("model.lm.tokenizer_path: " + loaded.status().message());
  const std::shared_ptr<const data::Tokenizer> tokenizer(std::move(loaded.value()));
  auto source = data::ShardSource::create(dataConfig, rank, world, tokenizer, shardFiles);
  if (!source) return source.status();
  out.train = std::move(source.value());

  // Validation: the datasets with val_shards, val_batches each, read the same
  // way every time (epoch 0, one worker) so evaluations are comparable.
  if (config.data.val_every_steps <= 0) return out;
  protocol::RunConfig val = dataConfig;
  val.data.datasets.clear();
  for (auto d : dataConfig.data.datasets) {
    if (d.val_shards.empty()) continue;
    d.shards = d.val_shards;
    d.workers = 1;
    d.samples_per_epoch = config.data.val_batches * d.batch_size * world;
    val.data.datasets.push_back(d);
  }
  if (val.data.datasets.empty()) return out;
  val.data.resampled = false;
  auto valSource = data::ShardSource::create(val, rank, world, tokenizer);
  if (!valSource) return Status::invalidArgument("validation: " + valSource.status().message());
  out.val = std::move(valSource.value());
  return out;
}
#endif

}  // namespace

Status checkDataCodecs(const protocol::RunConfig& config) {
#ifdef FS_NO_DATA_CODECS
  if (!readsShards(config)) return Status::ok();
  std::string datasets;
  for (size_t i = 0; i < config.data.datasets.size(); ++i) {
    datasets += std::string(i == 0 ? "" : ", ") + "data.datasets[" + std::to_string(i) + "] '" +
                config.data.datasets[i].name + "'";
  }
  return Status::invalidArgument("data.source: '" + config.data.source + "' reads " +
                                 (datasets.empty() ? std::string("shard datasets") : datasets) +
                                 " through the shard pipeline, but this build has no data codecs "
                                 "(FS_BUILD_DATA_CODECS=OFF); it trains on data.source synthetic only");
#else
  (void)config;
  return Status::ok();
#endif
}

protocol::StatusOr<DataSources> makeDataSources(
    const protocol::RunConfig& config, const std::filesystem::path& runDir, int64_t rank, int64_t world,
    const std::function<protocol::StatusOr<std::unique_ptr<data::DataSource>>()>& makeSource) {
  if (makeSource) {
    auto source = makeSource();
    if (!source) return source.status();
    DataSources out;
    out.train = std::move(source.value());
    return out;
  }
  if (readsShards(config)) {
    if (Status s = checkDataCodecs(config); !s) return s;
#ifndef FS_NO_DATA_CODECS
    return makeShardSources(config, runDir, rank, world);
#endif
  }
  auto source = data::SyntheticSource::create(config, rank, world);
  if (!source) return source.status();
  DataSources out;
  out.train = std::move(source.value());
  return out;
}

}  // namespace fs::trainer

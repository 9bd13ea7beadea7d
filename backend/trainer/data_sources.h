// The run's data streams: the training stream (TrainerOptions::makeSource,
// data.source shards or generated, else synthetic) and the held-out
// validation stream (datasets[].val_shards, read every
// data.val_every_steps; shards only).
//
// NOTE [Builds without data codecs]: FS_BUILD_DATA_CODECS=OFF builds the
// engine without the shard pipeline and its codecs (docs/gpu.md). Such an
// engine trains on data.source synthetic only; a config that reads shard
// datasets (shards, generated) is refused by checkDataCodecs, which the CLI
// calls before any work and makeDataSources again, so no path gets further.
//
// Thread-safety: one call per rank, at set-up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "backend/data/data_source.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::trainer {

struct DataSources {
  std::unique_ptr<data::DataSource> train;
  std::unique_ptr<data::DataSource> val;  // null: no dataset has val_shards (or no validation)
};

// OK, or in a build without the data codecs an invalid-argument error that
// names data.source and the datasets it would read, and the build option.
protocol::Status checkDataCodecs(const protocol::RunConfig& config);

// `makeSource`: optional, replaces the config's data source (data.source is then not consulted).
protocol::StatusOr<DataSources> makeDataSources(
    const protocol::RunConfig& config, const std::filesystem::path& runDir, int64_t rank, int64_t world,
    const std::function<protocol::StatusOr<std::unique_ptr<data::DataSource>>()>& makeSource);

}  // namespace fs::trainer

// The run's data streams: the training stream (TrainerOptions::makeSource,
// data.source shards or generated, else synthetic) and the held-out
// validation stream (datasets[].val_shards, read every
// data.val_every_steps; shards only).
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

namespace fs::engine {

struct DataSources {
  std::unique_ptr<data::DataSource> train;
  std::unique_ptr<data::DataSource> val;  // null: no dataset has val_shards (or no validation)
};

// `makeSource`: optional, replaces the config's data source (data.source is then not consulted).
protocol::StatusOr<DataSources> makeDataSources(
    const protocol::RunConfig& config, const std::filesystem::path& runDir, int64_t rank, int64_t world,
    const std::function<protocol::StatusOr<std::unique_ptr<data::DataSource>>()>& makeSource);

}  // namespace fs::engine

#include "backend/protocol/wire/sharded_index.h"

#include "backend/protocol/wire/checkpoint_record_json.h"
#include "backend/protocol/wire/json_fields.h"

namespace fs::protocol {

// ---- field lists: the one implementation of index.json ------------------------------------

template <class V>
void describe(V& v, ShardedMember& m) {
  v.req("name", m.name);
  v.req("shape", m.shape);
  v.req("offset", m.offset);
  v.req("numel", m.numel);
}

template <class V>
void describe(V& v, ShardedFlat& f) {
  v.req("key", f.key);
  v.req("trainable", f.trainable);
  v.req("dtype", f.dtype);
  v.req("numel", f.numel);
  v.req("padding", f.padding);
  v.req("shard_numel", f.shardNumel);
  v.req("optimizer_state", f.optimizerState);
  v.req("members", f.members);
}

template <class V>
void describe(V& v, ShardedUnit& u) {
  v.req("path", u.path);
  v.req("flats", u.flats);
}

template <class V>
void describe(V& v, ShardedParamGroup& g) {
  v.req("lr", g.lr);
  v.req("betas", g.betas);
  v.req("eps", g.eps);
  v.req("weight_decay", g.weightDecay);
  v.req("amsgrad", g.amsgrad);
  v.req("maximize", g.maximize);
  v.req("capturable", g.capturable);
  v.opt("initial_lr", g.initialLr);
  v.req("params", g.params);
  v.req("param_names", g.paramNames);
}

template <class V>
void describe(V& v, ShardedOptimizer& o) {
  v.req("param_groups", o.paramGroups);
}

template <class V>
void describe(V& v, ShardedLrScheduler& s) {
  v.req("base_lrs", s.baseLrs);
  v.req("last_epoch", s.lastEpoch);
  v.req("_step_count", s.stepCount);
  v.req("verbose", s.verbose);
  v.req("_get_lr_called_within_step", s.getLrCalledWithinStep);
  v.req("_last_lr", s.lastLr);
}

// What follows `format` and `version`, which decodeShardedIndex reads and checks first.
template <class V>
void describeBody(V& v, ShardedIndexRecord& x) {
  v.req("world_size", x.worldSize);
  v.req("strategy", x.strategy);
  v.req("shard_group_size", x.shardGroupSize);
  v.req("files", x.files);
  v.req("units", x.units);
  v.req("parameter_order", x.parameterOrder);
  v.req("buffers", x.buffers);
  v.req("optimizer", x.optimizer);
  v.req("lr_scheduler", x.scheduler);
  v.req("epoch", x.epoch);
  v.req("resume", x.resume);
}

template <class V>
void describe(V& v, ShardedIndexRecord& x) {
  v.req("format", x.format);
  v.req("version", x.version);
  describeBody(v, x);
}

// ---- codec ---------------------------------------------------------------------------------

std::string shardedRankFileName(std::int64_t shard) {
  return "rank-" + std::to_string(shard) + ".pt";
}

std::string encodeShardedIndex(const ShardedIndexRecord& index) {
  return json_fields::toJson(index).dump(1) + "\n";
}

StatusOr<ShardedIndexRecord> decodeShardedIndex(std::string_view text, std::int64_t* versionFound) {
  using json_fields::Json;
  if (versionFound != nullptr) *versionFound = 0;
  StatusOr<Json> parsed = json_fields::parseDocument(text);
  if (!parsed.isOk()) return parsed.status();
  const Json& root = *parsed;

  ShardedIndexRecord x;
  std::string error;
  json_fields::JsonReader r(root, "", &error, json_fields::ErrorStyle::kPathFirst);
  r.req("format", x.format);
  r.req("version", x.version);
  if (!error.empty()) return Status::invalidArgument(error);
  if (versionFound != nullptr) *versionFound = x.version;
  if (x.format != kShardedFormatName) {
    return Status::invalidArgument("format: '" + x.format + "' is not " + kShardedFormatName);
  }
  if (x.version != kShardedIndexVersion) {
    return Status::unsupported("version: " + std::to_string(x.version) +
                               " is not a version this build reads (" + std::to_string(kShardedIndexVersion) +
                               "); a newer Flamingo Studio wrote it");
  }
  describeBody(r, x);
  if (!error.empty()) return Status::invalidArgument(error);
  for (std::size_t i = 0; i < x.optimizer.paramGroups.size(); ++i) {
    const auto n = x.optimizer.paramGroups[i].betas.size();
    if (n != 2) {
      return Status::invalidArgument("optimizer.param_groups[" + std::to_string(i) +
                                     "].betas: " + std::to_string(n) + " numbers, not 2");
    }
  }
  return x;
}

}  // namespace fs::protocol

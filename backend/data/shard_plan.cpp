#include "backend/data/shard_plan.h"

#include <numeric>

#include "backend/protocol/config/shard_pattern.h"

namespace fs::data {

using protocol::Status;

namespace {
constexpr uint64_t kShardShuffleTag = 0x5348415244ULL;  // "SHARD"
constexpr uint64_t kResampleTag = 0x52455341ULL;        // "RESA"

Status checkSplit(const std::string& dataset, const ShardPlanOptions& options) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world || options.workers < 1) {
    return Status::invalidArgument("dataset " + dataset + ": rank " + std::to_string(options.rank) + " of " +
                                   std::to_string(options.world) + " with " +
                                   std::to_string(options.workers) + " workers is not a valid split");
  }
  return Status::ok();
}

}  // namespace

protocol::StatusOr<ShardPlan> ShardPlan::create(const std::string& dataset, const std::string& spec,
                                                const ShardPlanOptions& options) {
  if (Status s = checkSplit(dataset, options); !s) return s;
  if (spec.empty()) return Status::invalidArgument("datasets." + dataset + ".shards: no shards given");
  auto list = protocol::expandShards(spec);
  if (!list) return Status::invalidArgument("datasets." + dataset + ".shards: " + list.status().message());
  return fromList(dataset, std::move(list.value()), options, false);
}

protocol::StatusOr<ShardPlan> ShardPlan::fromFiles(const std::string& dataset, std::vector<std::string> files,
                                                   const ShardPlanOptions& options) {
  if (files.empty()) return Status::invalidArgument("datasets." + dataset + ".shards: no shard files given");
  return fromList(dataset, std::move(files), options, true);
}

protocol::StatusOr<ShardPlan> ShardPlan::fromList(const std::string& dataset, std::vector<std::string> list,
                                                  const ShardPlanOptions& options, bool filesOnly) {
  if (Status s = checkSplit(dataset, options); !s) return s;
  ShardPlan plan;
  plan.shards_ = std::move(list);
  plan.options_ = options;
  plan.filesOnly_ = filesOnly;
  const auto needed = static_cast<size_t>(options.world * options.workers);
  if (!options.resampled && plan.shards_.size() < needed) {
    return Status::invalidArgument("datasets." + dataset + ".shards: " + std::to_string(plan.shards_.size()) +
                                   " shard(s) for " + std::to_string(options.world) + " rank(s) x " +
                                   std::to_string(options.workers) +
                                   " worker(s); every worker needs one (at least " + std::to_string(needed) +
                                   "), or set data.resampled=true");
  }
  return plan;
}

std::vector<std::string> ShardPlan::workerShards(int64_t epoch, int64_t pass, int64_t worker) const {
  std::vector<std::string> out;
  for (size_t i : workerShardIndices(epoch, pass, worker)) out.push_back(shards_[i]);
  return out;
}

std::vector<size_t> ShardPlan::workerShardIndices(int64_t epoch, int64_t pass, int64_t worker) const {
  const auto n = shards_.size();
  std::vector<size_t> out;
  if (n == 0) return out;
  const auto& o = options_;
  if (o.resampled) {
    Rng rng(mixKey({kResampleTag, o.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(o.rank),
                    static_cast<uint64_t>(worker), static_cast<uint64_t>(pass)}));
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.push_back(rng.below(n));
    return out;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  Rng rng(mixKey({kShardShuffleTag, o.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(pass)}));
  for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  int64_t mine = 0;  // index among this rank's shards
  for (size_t i = static_cast<size_t>(o.rank); i < n; i += static_cast<size_t>(o.world), ++mine) {
    if (mine % o.workers == worker) out.push_back(order[i]);
  }
  return out;
}

}  // namespace fs::data

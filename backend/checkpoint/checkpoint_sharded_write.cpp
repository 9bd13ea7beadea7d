// Writing a sharded checkpoint: NOTE [Sharded checkpoints] in checkpoint_sharded.h.
#include <torch/serialize.h>
#include <torch/torch.h>

#include <map>
#include <set>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_recovery.h"
#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/checkpoint/checkpoint_sharded_index.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/runtime/torch_pickle.h"

namespace fs::checkpoint {

using protocol::Status;

namespace {

using GDict = c10::impl::GenericDict;

GDict newStrDict() {
  return GDict(c10::StringType::get(), c10::AnyType::get());
}

std::string flatKey(const std::string& unitPath, size_t flat) {
  return unitPath + "#" + std::to_string(flat);
}

// The unsharded optimizer layout's param groups: hyperparameters from the
// shard optimizer, indices and names over the model's trainable parameters
// (what fsdp::toFullState returns, without the state).
std::vector<step::AdamWGroupStateDict> fullParamGroups(const ShardedCheckpointSave& s) {
  const auto groups = step::groupParameters(s.trainable, s.weightDecay);
  std::vector<step::AdamWGroupStateDict> out;
  int64_t index = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    step::AdamWGroupStateDict g = s.shardOptimizer.paramGroups.at(gi);
    g.params.clear();
    g.paramNames.clear();
    for (const auto& name : groups[gi].names) {
      g.params.push_back(index++);
      g.paramNames.push_back(name);
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The shard optimizer's state by flat key (its parameters are named by flat key: fsdp::shardParameters).
std::map<std::string, const step::AdamWParamStateDict*> stateByFlat(const ShardedCheckpointSave& s) {
  std::map<std::string, const step::AdamWParamStateDict*> out;
  for (const auto& e : s.shardOptimizer.state) out[e.name] = &e;
  return out;
}

ShardedIndex buildIndex(const ShardedCheckpointSave& s, int64_t worldSize,
                        const std::set<std::string>& withState) {
  ShardedIndex x;
  x.worldSize = worldSize;
  x.strategy = s.strategy;
  x.shardGroupSize = s.model->shardGroup().size();
  for (int64_t r = 0; r < x.shardGroupSize; ++r) x.files.push_back(shardedRankFileName(r));
  for (const auto& u : s.model->units()) {
    ShardedUnit su;
    su.path = u.path;
    for (size_t k = 0; k < u.flats.size(); ++k) {
      const fsdp::FlatParameter& f = *u.flats[k];
      ShardedFlat sf;
      sf.key = flatKey(u.path, k);
      sf.trainable = f.trainable();
      sf.dtype = c10::toString(f.shard().scalar_type());
      sf.numel = f.numel();
      sf.padding = f.padding();
      sf.shardNumel = f.shardNumel();
      sf.optimizerState = withState.count(sf.key) > 0;
      for (size_t m = 0; m < f.members().size(); ++m) {
        const auto& p = f.members()[m].param;
        sf.members.push_back({f.members()[m].name, p.sizes().vec(), f.offsetOf(m), p.numel()});
      }
      su.flats.push_back(std::move(sf));
    }
    x.units.push_back(std::move(su));
  }
  x.parameterOrder = s.parameterOrder;
  for (const auto& [name, t] : s.buffers) x.buffers.push_back(name);
  x.paramGroups = fullParamGroups(s);
  x.scheduler = s.scheduler;
  x.epoch = s.epoch;
  x.resume = s.resume;
  return x;
}

// This rank's file: its shard of every flat parameter and their optimizer moments.
Status writeRankFile(const std::filesystem::path& path, const ShardedCheckpointSave& s, int64_t shard,
                     const std::map<std::string, const step::AdamWParamStateDict*>& state,
                     protocol::WriteEnv& env) {
  GDict shards(c10::StringType::get(), c10::TensorType::get());
  GDict hashes(c10::StringType::get(), c10::StringType::get());
  GDict optimizer = newStrDict();
  // Copies: a shard of a group of one is the whole buffer the members view, and a view would pickle its
  // storage.
  const auto own = [](const torch::Tensor& t) { return t.detach().to(torch::kCPU).contiguous().clone(); };
  for (const auto& u : s.model->units()) {
    for (size_t k = 0; k < u.flats.size(); ++k) {
      const std::string key = flatKey(u.path, k);
      const torch::Tensor t = own(u.flats[k]->shard());
      shards.insert(key, t);
      hashes.insert(key, tensorDigest(t));
      auto it = state.find(key);
      if (it == state.end()) continue;
      GDict moments = newStrDict();
      moments.insert("step", own(it->second->step));
      moments.insert("exp_avg", own(it->second->expAvg));
      moments.insert("exp_avg_sq", own(it->second->expAvgSq));
      optimizer.insert(key, moments);
    }
  }
  GDict top = newStrDict();
  top.insert("format", std::string(kShardedFormatName));
  top.insert("version", kShardedIndexVersion);
  top.insert("shard", shard);
  top.insert("shard_group_size", static_cast<int64_t>(s.model->shardGroup().size()));
  top.insert("shards", shards);
  top.insert("hashes", hashes);
  top.insert("optimizer", optimizer);
  if (shard == 0) {
    GDict buffers(c10::StringType::get(), c10::TensorType::get());
    for (const auto& [name, t] : s.buffers) buffers.insert(name, own(t));
    top.insert("buffers", buffers);
  }
  std::vector<char> bytes;
  try {
    bytes = fs::runtime::pickleForTorchLoad(top);
  } catch (const std::exception& e) {
    return Status::ioError(path.string() + ": cannot serialise the rank's shards: " + e.what());
  }
  protocol::AtomicWriteOptions options;
  options.env = &env;
  return protocol::atomicWriteFile(path, std::string_view(bytes.data(), bytes.size()), options);
}

// Moves the complete directory `from` to `to`, replacing what is there. A
// directory cannot be renamed over a non-empty one, so the old one is moved
// aside first (NOTE [Replacing a sharded checkpoint] in checkpoint_recovery.h):
// between the two renames only `.<name>.old` and the complete `from` exist, and
// the start-up recovery finishes the switch; a failed second rename is rolled back.
Status replaceDirectory(const std::filesystem::path& from, const std::filesystem::path& to,
                        protocol::WriteEnv& env) {
  const auto old = shardedOldName(to);
  const auto parent = protocol::parentDir(to);
  if (Status s = protocol::removeTree(env, old); !s) return s;
  std::error_code ec;
  const bool replacing = std::filesystem::exists(to, ec);
  if (replacing) {
    if (Status s = env.rename(to, old); !s) return s;
  }
  if (Status s = env.rename(from, to); !s) {
    if (replacing) (void)env.rename(old, to);
    return Status::ioError(to.string() + ": cannot put the new checkpoint in place: " + s.message());
  }
  if (Status s = env.syncDir(parent); !s) return s;
  if (!replacing) return Status::ok();
  if (Status s = protocol::removeTree(env, old); !s) return s;
  return env.syncDir(parent);
}

// Failures summed over every rank; every rank learns the same total.
int64_t agreeOnFailures(distributed::Communicator& world, bool failed, const std::string& what) {
  torch::Tensor n = torch::tensor({failed ? 1.0 : 0.0}, torch::kFloat64);
  if (world.size() > 1) world.allReduce(n, distributed::ReduceOp::kSum, what);
  return static_cast<int64_t>(n.item<double>());
}

}  // namespace

Status writeShardedCheckpoint(const std::filesystem::path& dir, const ShardedCheckpointSave& s,
                              distributed::Communicator& world, protocol::WriteEnv* writeEnv) {
  protocol::WriteEnv& env = protocol::writeEnvOr(writeEnv);
  const int rank = world.rank();
  // Written under a temporary name the scan ignores, then put in place: a checkpoint of the same name
  // (the one this run resumed from, say) stays whole until the new one is.
  const auto parent = protocol::parentDir(dir);
  const auto partial = shardedPartialName(dir);
  Status prepared = Status::ok();
  if (rank == 0) {
    prepared = protocol::removeTree(env, partial);
    if (prepared) prepared = env.createDir(partial);
    if (prepared) prepared = env.syncDir(parent);
    if (!prepared)
      prepared = Status::ioError(partial.string() +
                                 ": cannot create the checkpoint directory: " + prepared.message());
  }
  if (agreeOnFailures(world, !prepared, "sharded checkpoint: directory") > 0) {
    return rank == 0 ? prepared
                     : Status::ioError(partial.string() + ": rank 0 could not prepare the directory");
  }
  const auto state = stateByFlat(s);
  // The shard group of global rank 0 writes; its ranks are 0 .. group size - 1 (NOTE [Sharded checkpoints]).
  const bool writer = rank < s.model->shardGroup().size();
  Status written = Status::ok();
  if (writer) written = writeRankFile(partial / shardedRankFileName(rank), s, rank, state, env);
  const int64_t failed = agreeOnFailures(world, !written, "sharded checkpoint: rank files");
  if (failed > 0) {
    // Every rank is done writing: rank 0 removes the incomplete directory, so the space its files took
    // (a full disk) is free again for the error and run.json (what this misses, the next start removes).
    if (rank == 0) (void)protocol::removeTree(env, partial);
    if (!written) return written;
    return Status::ioError(dir.string() + ": " + std::to_string(failed) +
                           " rank(s) could not write their file");
  }
  if (rank != 0) return Status::ok();
  std::set<std::string> withState;
  for (const auto& [key, e] : state) withState.insert(key);
  const std::string index = encodeShardedIndex(buildIndex(s, world.size(), withState));
  protocol::AtomicWriteOptions options;
  options.env = &env;
  if (Status st = protocol::atomicWriteFile(partial / kShardedIndexFile, index, options); !st) {
    (void)protocol::removeTree(env, partial);
    return st;
  }
  return replaceDirectory(partial, dir, env);
}

}  // namespace fs::checkpoint

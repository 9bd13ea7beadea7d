// Reading a sharded checkpoint back into the full checkpoint's contents:
// NOTE [Sharded checkpoints] in checkpoint_sharded.h. Rank files are mapped
// (tensorfile), and each member's slices are copied straight from the
// mapping into its unsharded tensor: no rank file is ever loaded whole.
#include <torch/torch.h>

#include <cstring>
#include <map>

#include "backend/checkpoint/checkpoint_manifest.h"
#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/checkpoint/checkpoint_sharded_index.h"
#include "backend/checkpoint/weights.h"
#include "backend/tensorfile/content_hash.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::checkpoint {

using protocol::Status;
using protocol::StatusOr;
namespace tf = tensorfile;

namespace {

// One rank file, opened, with its tensors found by key.
struct RankFile {
  tf::TorchFile file;
  std::map<std::string, const tf::PyValue*> shards, hashes, buffers;
  std::map<std::string, const tf::PyValue*> optimizer;  // flat key -> {step, exp_avg, exp_avg_sq}
};

std::map<std::string, const tf::PyValue*> entriesOf(const tf::PyValue* dict) {
  std::map<std::string, const tf::PyValue*> out;
  if (dict && dict->isDict()) {
    for (const auto& [k, v] : dict->entries) out[tf::keyToString(*k)] = v.get();
  }
  return out;
}

StatusOr<RankFile> openRankFile(const std::filesystem::path& path, int64_t shard) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::notFound(path.string() + ": missing: the sharded checkpoint is incomplete");
  }
  auto file = tf::openTorchFile(path.string());
  if (!file)
    return Status::corruption(path.string() + ": unreadable or torn rank file: " + file.status().message());
  const tf::PyValue& root = file->root();
  const tf::PyValue* s = root.find("shard");
  if (!s || s->asInt() != shard || !root.find("shards")) {
    return Status::corruption(path.string() + ": not the rank file of shard " + std::to_string(shard));
  }
  RankFile r{std::move(file.value()), {}, {}, {}, {}};
  const tf::PyValue& top = r.file.root();  // the moved file keeps its tree
  r.shards = entriesOf(top.find("shards"));
  r.hashes = entriesOf(top.find("hashes"));
  r.buffers = entriesOf(top.find("buffers"));
  r.optimizer = entriesOf(top.find("optimizer"));
  return r;
}

// The bytes of a 1-D tensor of `numel` elements of `dtype`, checked.
StatusOr<std::span<const std::byte>> flatBytes(const RankFile& r, const tf::PyValue* v,
                                               const std::string& what, int64_t numel,
                                               c10::ScalarType dtype) {
  const std::string where = r.file.path() + ": " + what;
  if (!v || !v->isTensor()) return Status::corruption(where + " is missing");
  auto view = r.file.view(*v->tensor);
  if (!view) return Status::corruption(where + ": " + view.status().message());
  if (view->numel() != numel || view->shape.size() != 1 || !view->isContiguous()) {
    return Status::corruption(where + " has " + std::to_string(view->numel()) + " elements, the index says " +
                              std::to_string(numel));
  }
  auto stored = torchDtype(view->dtype);
  if (!stored || stored.value() != dtype) {
    return Status::corruption(where + " is " + std::string(tf::torchName(view->dtype)) + ", the index says " +
                              c10::toString(dtype));
  }
  return view->bytes.first(static_cast<size_t>(numel) * c10::elementSize(dtype));
}

// Copies elements [offset, offset + out.numel()) of a flat buffer sharded
// into `shards` (shard s holds [s * shardNumel, (s + 1) * shardNumel)) into `out`.
void copyFromShards(const std::vector<std::span<const std::byte>>& shards, int64_t shardNumel, int64_t offset,
                    torch::Tensor& out) {
  const int64_t numel = out.numel();
  const size_t item = out.element_size();
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  for (int64_t at = offset; at < offset + numel;) {
    const int64_t s = at / shardNumel;
    const int64_t end = std::min(offset + numel, (s + 1) * shardNumel);
    std::memcpy(dst + (at - offset) * item,
                shards[static_cast<size_t>(s)].data() + (at - s * shardNumel) * item,
                static_cast<size_t>(end - at) * item);
    at = end;
  }
}

struct MemberState {
  torch::Tensor step, expAvg, expAvgSq;
};

// Every rank file's slices of one flat parameter (and its optimizer moments).
struct FlatReader {
  const std::vector<RankFile>& files;
  const ShardedFlat& flat;

  StatusOr<std::vector<std::span<const std::byte>>> spans(const std::string& moment,
                                                          c10::ScalarType dtype) const {
    std::vector<std::span<const std::byte>> out;
    for (const auto& r : files) {
      const tf::PyValue* v = nullptr;
      std::string what = "shard of " + flat.key;
      if (moment.empty()) {
        auto it = r.shards.find(flat.key);
        v = it == r.shards.end() ? nullptr : it->second;
      } else {
        auto it = r.optimizer.find(flat.key);
        v = it == r.optimizer.end() ? nullptr : it->second->find(moment);
        what = moment + " of " + flat.key;
      }
      auto bytes = flatBytes(r, v, what, flat.shardNumel, dtype);
      if (!bytes) return bytes.status();
      out.push_back(bytes.value());
    }
    return out;
  }

  Status checkHashes(const std::vector<std::span<const std::byte>>& shards) const {
    for (size_t s = 0; s < files.size(); ++s) {
      auto it = files[s].hashes.find(flat.key);
      if (it == files[s].hashes.end() || !it->second->isStr()) continue;  // nothing recorded to check against
      if (tf::contentHashText(tf::xxh64(shards[s])) != it->second->text) {
        return Status::corruption(files[s].file.path() + ": the shard of " + flat.key +
                                  " does not match its hash (damaged file)");
      }
    }
    return Status::ok();
  }
};

// One tensor of a flat's optimizer entry in `r`; a missing one is named.
StatusOr<const tf::TensorRef*> optimizerTensor(const RankFile& r, const std::string& key,
                                               const char* moment) {
  auto it = r.optimizer.find(key);
  const tf::PyValue* v = it == r.optimizer.end() ? nullptr : it->second->find(moment);
  if (!v || !v->isTensor()) {
    return Status::corruption(r.file.path() + ": optimizer " + moment + " of " + key + " is missing");
  }
  return v->tensor.get();
}

}  // namespace

StatusOr<CheckpointContents> readShardedCheckpoint(const std::filesystem::path& dir,
                                                   const std::function<void(int64_t, int64_t)>& progress) {
  auto index = readShardedIndex(dir);
  if (!index) return index.status();
  const ShardedIndex& x = index.value();
  std::vector<RankFile> files;
  for (size_t s = 0; s < x.files.size(); ++s) {
    auto r = openRankFile(dir / x.files[s], static_cast<int64_t>(s));
    if (!r) return r.status();
    files.push_back(std::move(r.value()));
  }
  torch::NoGradGuard noGrad;
  std::map<std::string, torch::Tensor> params;
  std::map<std::string, MemberState> moments;
  int64_t flatsDone = 0, flatsTotal = 0;
  for (const auto& u : x.units) flatsTotal += static_cast<int64_t>(u.flats.size());
  for (const auto& u : x.units) {
    for (const auto& f : u.flats) {
      if (progress) progress(flatsDone++, flatsTotal);
      auto dtype = dtypeFromName(f.dtype);
      if (!dtype)
        return Status::corruption((dir / kShardedIndexFile).string() + ": " + f.key + ": " +
                                  dtype.status().message());
      const FlatReader reader{files, f};
      auto shards = reader.spans("", dtype.value());
      if (!shards) return shards.status();
      if (Status s = reader.checkHashes(shards.value()); !s) return s;
      for (const auto& m : f.members) {
        torch::Tensor t = torch::empty(m.shape, torch::TensorOptions().dtype(dtype.value()));
        copyFromShards(shards.value(), f.shardNumel, m.offset, t);
        params[m.name] = t.set_requires_grad(f.trainable);
      }
      if (!f.optimizerState) continue;
      // The members of a flat step together: one step count; the moments' dtype is the optimizer's.
      auto stepRef = optimizerTensor(files.front(), f.key, "step");
      if (!stepRef) return stepRef.status();
      auto step = tensorFromFile(files.front().file, *stepRef.value(), "optimizer step of " + f.key);
      if (!step) return step.status();
      auto avgRef = optimizerTensor(files.front(), f.key, "exp_avg");
      if (!avgRef) return avgRef.status();
      auto type = torchDtype(avgRef.value()->dtype);
      if (!type)
        return Status::corruption(files.front().file.path() + ": exp_avg of " + f.key + ": " +
                                  type.status().message());
      const auto momentType = type.value();
      auto m = reader.spans("exp_avg", momentType);
      if (!m) return m.status();
      auto v = reader.spans("exp_avg_sq", momentType);
      if (!v) return v.status();
      for (const auto& member : f.members) {
        MemberState ms{step->clone(), torch::empty(member.shape, torch::TensorOptions().dtype(momentType)),
                       torch::empty(member.shape, torch::TensorOptions().dtype(momentType))};
        copyFromShards(m.value(), f.shardNumel, member.offset, ms.expAvg);
        copyFromShards(v.value(), f.shardNumel, member.offset, ms.expAvgSq);
        moments[member.name] = std::move(ms);
      }
    }
  }

  CheckpointContents c;
  model::NamedTensors ordered, buffers;
  for (const auto& name : x.parameterOrder) {
    auto it = params.find(name);
    if (it == params.end()) {
      return Status::corruption((dir / kShardedIndexFile).string() + ": parameter " + name +
                                " is in parameter_order but in no flat parameter");
    }
    ordered.emplace_back(name, it->second);
  }
  for (const auto& name : x.buffers) {
    auto it = files.front().buffers.find(name);
    if (it == files.front().buffers.end() || !it->second->isTensor()) {
      return Status::corruption(files.front().file.path() + ": buffer " + name + " is missing");
    }
    auto t = tensorFromFile(files.front().file, *it->second->tensor, name);
    if (!t) return t.status();
    buffers.emplace_back(name, t.value());
  }
  c.modelState = checkpointModelState(ordered, buffers);
  c.optimizer.paramGroups = x.paramGroups;
  for (const auto& g : x.paramGroups) {
    for (size_t i = 0; i < g.params.size(); ++i) {
      auto it = moments.find(g.paramNames.at(i));
      if (it == moments.end()) continue;
      c.optimizer.state.push_back(
          {g.params[i], it->first, it->second.step, it->second.expAvg, it->second.expAvgSq});
    }
  }
  std::sort(c.optimizer.state.begin(), c.optimizer.state.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  c.scheduler = x.scheduler;
  c.epoch = x.epoch;
  c.resume = x.resume;
  try {
    c.resume.manifest = withTensorRecords(x.resume.manifest, c.modelState);
  } catch (const std::exception& e) {
    return Status::corruption((dir / kShardedIndexFile).string() + ": resume.manifest is not valid JSON");
  }
  return c;
}

StatusOr<int64_t> shardedCheckpointIteration(const std::filesystem::path& dir) {
  auto index = readShardedIndex(dir);
  if (!index) return index.status();
  for (const auto& f : index->files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dir / f, ec)) {
      return Status::notFound((dir / f).string() + ": missing: the sharded checkpoint is incomplete");
    }
  }
  return index->resume.iteration;
}

}  // namespace fs::checkpoint

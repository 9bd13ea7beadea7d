#include "backend/checkpoint/checkpoint_sharded_index.h"

#include <fstream>
#include <sstream>

#include "backend/checkpoint/weights.h"
#include "backend/tensorfile/dtype.h"

namespace fs::checkpoint {

using protocol::Status;

namespace {

protocol::ShardedParamGroup groupRecord(const step::AdamWGroupStateDict& g) {
  return {g.lr,       {g.beta1, g.beta2}, g.eps,       g.weightDecay, g.amsgrad,
          g.maximize, g.capturable,       g.initialLr, g.params,      g.paramNames};
}

step::AdamWGroupStateDict groupFrom(const protocol::ShardedParamGroup& r) {
  step::AdamWGroupStateDict g;
  g.lr = r.lr;
  g.beta1 = r.betas.at(0);  // the codec checked there are two
  g.beta2 = r.betas.at(1);
  g.eps = r.eps;
  g.weightDecay = r.weightDecay;
  g.amsgrad = r.amsgrad;
  g.maximize = r.maximize;
  g.capturable = r.capturable;
  g.initialLr = r.initialLr;
  g.params = r.params;
  g.paramNames = r.paramNames;
  return g;
}

}  // namespace

std::string encodeShardedIndex(const ShardedIndex& x) {
  protocol::ShardedIndexRecord r;
  r.version = x.version;
  r.worldSize = x.worldSize;
  r.strategy = x.strategy;
  r.shardGroupSize = x.shardGroupSize;
  r.files = x.files;
  r.units = x.units;
  r.parameterOrder = x.parameterOrder;
  r.buffers = x.buffers;
  for (const auto& g : x.paramGroups) r.optimizer.paramGroups.push_back(groupRecord(g));
  const auto& s = x.scheduler;
  r.scheduler = {s.baseLrs, s.lastEpoch, s.stepCount, s.verbose, s.getLrCalledWithinStep, s.lastLr};
  r.epoch = x.epoch;
  r.resume = toResumeRecord(x.resume);
  return protocol::encodeShardedIndex(r);
}

protocol::StatusOr<ShardedIndex> decodeShardedIndex(const std::string& text,
                                                    const std::filesystem::path& where) {
  const auto bad = [&](const std::string& what) { return Status::corruption(where.string() + ": " + what); };
  int64_t version = 0;
  auto decoded = protocol::decodeShardedIndex(text, &version);
  if (!decoded) {
    const Status& st = decoded.status();
    if (st.code() == Status::Code::kUnsupported) {
      return Status::unsupported(where.string() + ": index version " + std::to_string(version) +
                                 " is unknown (this engine reads version " +
                                 std::to_string(kShardedIndexVersion) + ")");
    }
    if (st.code() == Status::Code::kCorruption) return bad(st.message() + " (torn or damaged index)");
    return bad("malformed index: " + st.message());
  }
  protocol::ShardedIndexRecord& r = *decoded;
  ShardedIndex x;
  x.version = r.version;
  x.worldSize = r.worldSize;
  x.strategy = std::move(r.strategy);
  x.shardGroupSize = r.shardGroupSize;
  x.files = std::move(r.files);
  x.units = std::move(r.units);
  x.parameterOrder = std::move(r.parameterOrder);
  x.buffers = std::move(r.buffers);
  for (const auto& g : r.optimizer.paramGroups) x.paramGroups.push_back(groupFrom(g));
  const auto& s = r.scheduler;
  x.scheduler = {s.baseLrs, s.lastEpoch, s.stepCount, s.verbose, s.getLrCalledWithinStep, s.lastLr};
  x.epoch = r.epoch;
  auto resume = fromResumeRecord(r.resume);
  if (!resume) return bad("malformed index: resume: " + resume.status().message());
  x.resume = std::move(resume.value());
  // The layout must add up, so a reader can trust offsets and sizes.
  if (x.shardGroupSize < 1 || static_cast<int64_t>(x.files.size()) != x.shardGroupSize) {
    return bad(std::to_string(x.files.size()) + " rank files listed for a shard group of " +
               std::to_string(x.shardGroupSize));
  }
  for (const auto& u : x.units) {
    for (const auto& f : u.flats) {
      if (f.shardNumel * x.shardGroupSize != f.numel + f.padding || f.padding < 0) {
        return bad("flat parameter " + f.key + ": " + std::to_string(f.numel) + " elements + " +
                   std::to_string(f.padding) + " padding is not " + std::to_string(x.shardGroupSize) +
                   " shards of " + std::to_string(f.shardNumel));
      }
      for (const auto& m : f.members) {
        int64_t n = 1;
        for (int64_t d : m.shape) n *= d;
        if (n != m.numel || m.offset < 0 || m.offset + m.numel > f.numel) {
          return bad("member " + m.name + " of " + f.key +
                     " lies outside its flat parameter or disagrees with its shape");
        }
      }
    }
  }
  return x;
}

protocol::StatusOr<ShardedIndex> readShardedIndex(const std::filesystem::path& dir) {
  const auto path = dir / kShardedIndexFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound(path.string() + ": missing: an incomplete sharded checkpoint");
  std::stringstream ss;
  ss << in.rdbuf();
  return decodeShardedIndex(ss.str(), path);
}

protocol::StatusOr<c10::ScalarType> dtypeFromName(const std::string& name) {
  const auto dtype = tensorfile::dtypeFromC10Name(name);
  if (!dtype) return Status::unsupported("dtype '" + name + "' is not one a parameter can have");
  return torchDtype(*dtype);
}

}  // namespace fs::checkpoint

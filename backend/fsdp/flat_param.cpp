#include "backend/fsdp/flat_param.h"

#include <c10/core/StorageImpl.h>

#include <algorithm>

#include "backend/distributed/shared_shards.h"
#include "backend/fsdp_plan/sharding.h"
#include "backend/telemetry/memory_tracker.h"

namespace fs::fsdp {

FlatParameter::FlatParameter(std::vector<FlatMember> members, int shardRank, int shardSize, FlatDtypes dtypes,
                             distributed::Communicator* valuesFrom, FlatPlacement placement)
    : members_(std::move(members)), shardRank_(shardRank), shardSize_(shardSize), placement_(placement) {
  TORCH_CHECK(!members_.empty(), "FlatParameter: no members");
  TORCH_CHECK(shardSize_ >= 1 && shardRank_ >= 0 && shardRank_ < shardSize_, "FlatParameter: rank ",
              shardRank_, " outside a shard group of ", shardSize_);
  const auto& first = members_.front().param;
  trainable_ = first.requires_grad();
  for (const auto& m : members_) {
    TORCH_CHECK(m.param.defined() && m.param.is_leaf(), "FlatParameter: ", m.name,
                " is not a leaf parameter");
    TORCH_CHECK(m.param.scalar_type() == first.scalar_type() && m.param.device() == first.device(),
                "FlatParameter: ", m.name, " is ", m.param.scalar_type(), " on ", m.param.device(), ", ",
                members_.front().name, " is ", first.scalar_type(), " on ", first.device());
    TORCH_CHECK(m.param.requires_grad() == trainable_, "FlatParameter: ", m.name,
                " differs in requires_grad from ", members_.front().name);
    offsets_.push_back(numel_);
    numel_ += m.param.numel();
  }
  // NOTE [Mixed precision in a flat parameter]
  modelDtype_ = first.scalar_type();
  const c10::ScalarType gatherType = dtypes.gather.value_or(modelDtype_);
  const c10::ScalarType storage = trainable_ ? dtypes.store.value_or(modelDtype_) : gatherType;
  reduceDtype_ = dtypes.reduce.value_or(storage);
  cast_ = gatherType != storage;
  needsGather_ = shardSize_ > 1 || cast_ || placement_.offload;
  shardNumel_ = fsdp_plan::shardNumel(numel_, shardSize_);  // the planner's rule, so plans match
  const int64_t padded = shardNumel_ * shardSize_;
  const auto options =
      first.options().dtype(storage).requires_grad(false).device(placement_.device.value_or(first.device()));
  const bool holdsValues = !valuesFrom || valuesFrom->rank() == 0;
  const bool broadcasts = valuesFrom && valuesFrom->size() > 1;
  const std::string what = "initial values of " + members_.front().name;
  {
    torch::NoGradGuard noGrad;
    torch::Tensor values;
    if (holdsValues || shardSize_ == 1) {
      values = torch::zeros({padded}, options);
      if (holdsValues) {
        for (size_t i = 0; i < members_.size(); ++i) {
          auto& p = members_[i].param;
          values.narrow(0, offsets_[i], p.numel()).copy_(p.detach().reshape({-1}));
        }
      }
    }
    if (broadcasts && shardSize_ == 1) {
      valuesFrom->broadcast(values, 0, what);  // every rank keeps all of it
    } else if (broadcasts) {
      // NOTE [Values from the node's first rank]: a receiving rank keeps only its shard of what is
      // broadcast, one chunk at a time, so it never holds the whole flat parameter.
      const int64_t chunk =
          std::max<int64_t>(1, kInitChunkBytes / static_cast<int64_t>(c10::elementSize(storage)));
      const int64_t begin = shardRank_ * shardNumel_, end = begin + shardNumel_;
      torch::Tensor buffer = holdsValues ? torch::Tensor() : torch::empty({std::min(chunk, padded)}, options);
      if (!holdsValues) shard_ = torch::empty({shardNumel_}, options);
      for (int64_t at = 0; at < padded; at += chunk) {
        const int64_t n = std::min(chunk, padded - at);
        torch::Tensor piece = holdsValues ? values.narrow(0, at, n) : buffer.narrow(0, 0, n);
        valuesFrom->broadcast(piece, 0, what);
        const int64_t lo = std::max(at, begin), hi = std::min(at + n, end);
        if (!holdsValues && lo < hi)
          shard_.narrow(0, lo - begin, hi - lo).copy_(piece.narrow(0, lo - at, hi - lo));
      }
    }
    if (values.defined()) {
      // A group of one: the shard is the full buffer itself, nothing to gather (no second copy).
      shard_ = shardSize_ == 1 ? values : values.narrow(0, shardRank_ * shardNumel_, shardNumel_).clone();
      full_ = cast_ ? values.to(gatherType) : values;
    } else {
      full_ = torch::empty({padded}, options.dtype(gatherType));  // never written: freed below
    }
    if (placement_.offload) {  // NOTE [CPU offload]: a copy in host memory, never the full buffer itself
      torch::Tensor host =
          torch::empty({shardNumel_}, options.device(torch::kCPU).pinned_memory(full_.is_cuda()));
      host.copy_(shard_);
      shard_ = host;
    }
  }
  shard_.set_requires_grad(trainable_);
  // Re-point every member into the full buffer (NOTE [Freeing gathered storage]).
  for (size_t i = 0; i < members_.size(); ++i) {
    auto& p = members_[i].param;
    p.set_data(full_.narrow(0, offsets_[i], p.numel()).view(p.sizes()));
  }
  if (needsGather_) free();
}

FlatParameter::LocalSlice FlatParameter::localSlice(size_t member) const {
  const int64_t begin = offsets_.at(member);
  const int64_t shardBegin = shardRank_ * shardNumel_;
  const int64_t lo = std::max(begin, shardBegin);
  const int64_t hi = std::min(begin + members_[member].param.numel(), shardBegin + shardNumel_);
  return lo < hi ? LocalSlice{lo - begin, lo - shardBegin, hi - lo} : LocalSlice{};
}

void FlatParameter::allocateFull() {
  c10::StorageImpl* s = full_.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(full_.numel()) * full_.element_size();
  s->set_data_ptr_noswap(s->allocator()->allocate(bytes));
  s->set_nbytes(bytes);
}

torch::Tensor FlatParameter::shardOnDevice(bool cast) const {
  torch::Tensor s = shard_.detach();
  if (placement_.offload) {  // NOTE [CPU offload]: copied, then cast on the compute device
    torch::Tensor onDevice = torch::empty({shardNumel_}, s.options().device(full_.device()));
    onDevice.copy_(s, /*non_blocking=*/placement_.asyncCopies);
    s = onDevice;
  }
  return cast && cast_ ? s.to(full_.scalar_type()) : s;
}

void FlatParameter::gather(distributed::Communicator& comm, const std::string& what) {
  if (pendingGather_) {
    auto pending = std::move(pendingGather_);
    pending->wait();
    return;
  }
  if (gathered_) return;
  gathered_ = true;
  if (shared_) return gatherShared();
  allocateFull();
  if (shardSize_ == 1) {
    // A cast or an offloaded shard (without either there is nothing to gather).
    full_.copy_(placement_.offload ? shardOnDevice(/*cast=*/true) : shard_.detach());
  } else {
    comm.allGather(full_, shardOnDevice(/*cast=*/true), what);
  }
}

void FlatParameter::beginGather(distributed::Communicator& comm, const std::string& what) {
  if (gathered_) return;
  if (shardSize_ == 1 || shared_) {  // nothing to wait for: gathered at once
    gather(comm, what);
    return;
  }
  allocateFull();
  gathered_ = true;
  // full_ is a view of the storage the members share; the collective writes into it from Gloo's thread
  // (and keeps the cast shard alive until it is done).
  pendingGather_ = comm.allGatherAsync(full_, shardOnDevice(/*cast=*/true), what);
}

void FlatParameter::free() {
  if (pendingGather_) {  // never take memory away under a collective still writing into it
    auto pending = std::move(pendingGather_);
    pending->wait();
  }
  if (!gathered_ || !needsGather_) return;  // the members view the shard itself
  c10::StorageImpl* s = full_.storage().unsafeGetStorageImpl();
  if (shared_ && !cast_)
    telemetry::trackExternalBytes(telemetry::Phase::kGathered, -static_cast<int64_t>(s->nbytes()));
  s->set_data_ptr_noswap(at::DataPtr(nullptr, full_.device()));
  s->set_nbytes(0);
  gathered_ = false;
}

void FlatParameter::moveShardInto(distributed::SharedShards& store, uint64_t offset) {
  const uint64_t padded = static_cast<uint64_t>(paddedNumel()) * shard_.element_size();
  TORCH_CHECK(store.size() == shardSize_ && store.rank() == shardRank_, "FlatParameter ",
              members_.front().name, ": shared shards of rank ", store.rank(), " of ", store.size(),
              " for shard ", shardRank_, " of ", shardSize_);
  TORCH_CHECK(offset % 64 == 0 && offset + padded <= store.bytes(), "FlatParameter ", members_.front().name,
              ": ", padded, " bytes at offset ", offset, " do not fit shared shards of ", store.bytes());
  TORCH_CHECK(!gathered_ && !reduction_, "FlatParameter ", members_.front().name, ": moved while in use");
  TORCH_CHECK(!placement_.offload, "FlatParameter ", members_.front().name,
              ": an offloaded shard cannot move into shared shards");
  torch::NoGradGuard noGrad;
  shared_ = store.data() + offset;
  torch::Tensor mine = at::from_blob(shared_ + static_cast<uint64_t>(shardBytes()) * shardRank_,
                                     {shardNumel_}, shard_.options().requires_grad(false));
  mine.copy_(shard_.detach());
  shard_.set_data(mine);  // the same leaf (the optimizer's), now in the node's segment
}

void FlatParameter::gatherShared() {
  const size_t bytes = static_cast<size_t>(paddedNumel()) * full_.element_size();
  c10::StorageImpl* s = full_.storage().unsafeGetStorageImpl();
  if (cast_) {
    allocateFull();
    // Through a view of our own: the full buffer's autograd metadata stays untouched (NOTE [Freeing gathered
    // storage]).
    at::from_blob(full_.data_ptr(), {paddedNumel()}, at::TensorOptions().dtype(full_.scalar_type()))
        .copy_(at::from_blob(shared_, {paddedNumel()}, at::TensorOptions().dtype(shard_.scalar_type())));
    return;
  }
  // The members view the node's buffer itself. Its pages count in this rank's resident memory, and in the
  // tracker as gathered, as a copy would.
  s->set_data_ptr_noswap(at::DataPtr(shared_, full_.device()));
  s->set_nbytes(bytes);
  telemetry::trackExternalBytes(telemetry::Phase::kGathered, static_cast<int64_t>(bytes));
}

int64_t FlatParameter::gatheredBytes() const {
  return needsGather_ ? static_cast<int64_t>(full_.storage().nbytes()) : 0;
}

torch::Tensor FlatParameter::gatherValues(distributed::Communicator& comm, const std::string& what) const {
  if (shardSize_ == 1) return shard_.detach();
  // On the compute device, where the collective runs (an offloaded shard is copied there first).
  torch::Tensor out =
      torch::empty({paddedNumel()}, shard_.options().device(full_.device()).requires_grad(false));
  comm.allGather(out, shardOnDevice(/*cast=*/false), what);
  return out;
}

struct FlatParameter::Reduction {
  torch::Tensor flat;  // the full-size gradient, alive until the collective is done
  torch::Tensor mine;  // this rank's summed chunk
  std::unique_ptr<distributed::PendingCollective> pending;
  distributed::Communicator* replicas = nullptr;  // still to all-reduce across (hybrid_shard)
  double scale = 1.0;
  std::string what;
};

FlatParameter::~FlatParameter() {
  if (shared_ && !cast_ && gathered_) {  // a view of the node's buffer that the tracker counts
    telemetry::trackExternalBytes(telemetry::Phase::kGathered,
                                  -static_cast<int64_t>(full_.storage().unsafeGetStorageImpl()->nbytes()));
  }
}

void FlatParameter::reduceGradients(distributed::Communicator& comm, double scale, const std::string& what,
                                    distributed::Communicator* replicas) {
  beginReduce(comm, scale, what, replicas);
  finishReduce();
  if (!placement_.asyncCopies) landGradients();
}

void FlatParameter::beginReduce(distributed::Communicator& comm, double scale, const std::string& what,
                                distributed::Communicator* replicas) {
  TORCH_CHECK(trainable_, "FlatParameter::reduceGradients: frozen parameters have no gradients");
  finishReduce();  // an earlier pass's, still in flight: its sum is added first, as if it had been waited for
  torch::NoGradGuard noGrad;
  auto r = std::make_unique<Reduction>();
  r->flat = torch::zeros({paddedNumel()}, full_.options().dtype(reduceDtype_));
  for (size_t i = 0; i < members_.size(); ++i) {
    auto& p = members_[i].param;
    const torch::Tensor g = p.grad();
    if (g.defined()) r->flat.narrow(0, offsets_[i], p.numel()).copy_(g.reshape({-1}));
    p.mutable_grad() = torch::Tensor();
  }
  r->scale = scale;
  if (reduceDtype_ == torch::kHalf && scale != 1.0) {  // float16 overflows easily: scale before the sum
    r->flat.mul_(scale);
    r->scale = 1.0;
  }
  r->what = what;
  const bool replicated = replicas && replicas->size() > 1;
  if (shardSize_ > 1) {
    r->mine = torch::empty({shardNumel_}, r->flat.options());
    r->pending = comm.reduceScatterAsync(r->mine, r->flat, distributed::ReduceOp::kSum, what);
    r->replicas = replicated ? replicas : nullptr;
  } else {
    r->mine = r->flat;  // a shard group of one: the flat gradient is the shard's
    if (replicated)
      r->pending = replicas->allReduceAsync(r->mine, distributed::ReduceOp::kSum, what + " across replicas");
  }
  // Published copies need no source: the full-size gradient is gone as soon as the reduction is issued.
  if (r->pending && r->pending->inputCopied()) r->flat = torch::Tensor();
  reduction_ = std::move(r);
}

// A shard group of one reduces the flat gradient itself, in place: full size either way.
bool FlatParameter::reductionHoldsInput() const {
  return reduction_ && (reduction_->flat.defined() || shardSize_ == 1);
}

void FlatParameter::finishReduce() {
  if (!reduction_) return;
  torch::NoGradGuard noGrad;
  auto r = std::move(reduction_);
  if (r->pending) r->pending->wait();
  if (r->replicas) r->replicas->allReduce(r->mine, distributed::ReduceOp::kSum, r->what + " across replicas");
  torch::Tensor mine =
      r->mine.scalar_type() == shard_.scalar_type() ? r->mine : r->mine.to(shard_.scalar_type());
  if (r->scale != 1.0) mine.mul_(r->scale);
  if (placement_.offload) {  // NOTE [CPU offload]: lands in host memory; added by landGradients()
    torch::Tensor host =
        torch::empty({shardNumel_}, shard_.options().requires_grad(false).pinned_memory(full_.is_cuda()));
    host.copy_(mine, /*non_blocking=*/placement_.asyncCopies);
    landing_.push_back(std::move(host));
    return;
  }
  addToShardGradient(mine);
}

void FlatParameter::landGradients() {
  for (const auto& chunk : landing_) addToShardGradient(chunk);
  landing_.clear();
}

void FlatParameter::addToShardGradient(const torch::Tensor& chunk) {
  torch::NoGradGuard noGrad;
  if (shard_.grad().defined()) {
    shard_.mutable_grad().add_(chunk);
  } else {
    shard_.mutable_grad() = chunk;
  }
}

}  // namespace fs::fsdp

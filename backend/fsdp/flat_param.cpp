#include "backend/fsdp/flat_param.h"

#include <c10/core/StorageImpl.h>

#include <algorithm>

#include "backend/fsdp_plan/sharding.h"

namespace fs::fsdp {

FlatParameter::FlatParameter(std::vector<FlatMember> members, int shardRank, int shardSize)
    : members_(std::move(members)), shardRank_(shardRank), shardSize_(shardSize) {
  TORCH_CHECK(!members_.empty(), "FlatParameter: no members");
  TORCH_CHECK(shardSize_ >= 1 && shardRank_ >= 0 && shardRank_ < shardSize_, "FlatParameter: rank ", shardRank_,
              " outside a shard group of ", shardSize_);
  const auto& first = members_.front().param;
  trainable_ = first.requires_grad();
  for (const auto& m : members_) {
    TORCH_CHECK(m.param.defined() && m.param.is_leaf(), "FlatParameter: ", m.name, " is not a leaf parameter");
    TORCH_CHECK(m.param.scalar_type() == first.scalar_type() && m.param.device() == first.device(),
                "FlatParameter: ", m.name, " is ", m.param.scalar_type(), " on ", m.param.device(), ", ",
                members_.front().name, " is ", first.scalar_type(), " on ", first.device());
    TORCH_CHECK(m.param.requires_grad() == trainable_, "FlatParameter: ", m.name,
                " differs in requires_grad from ", members_.front().name);
    offsets_.push_back(numel_);
    numel_ += m.param.numel();
  }
  shardNumel_ = fsdp_plan::shardNumel(numel_, shardSize_);  // the planner's rule, so plans match
  full_ = torch::zeros({shardNumel_ * shardSize_}, first.options().requires_grad(false));
  {
    torch::NoGradGuard noGrad;
    for (size_t i = 0; i < members_.size(); ++i) {
      auto& p = members_[i].param;
      full_.narrow(0, offsets_[i], p.numel()).copy_(p.detach().reshape({-1}));
    }
    // A group of one: the shard is the full buffer itself, nothing to gather (no second copy).
    shard_ = shardSize_ == 1 ? full_ : full_.narrow(0, shardRank_ * shardNumel_, shardNumel_).clone();
  }
  shard_.set_requires_grad(trainable_);
  // Re-point every member into the full buffer (NOTE [Freeing gathered storage]).
  for (size_t i = 0; i < members_.size(); ++i) {
    auto& p = members_[i].param;
    p.set_data(full_.narrow(0, offsets_[i], p.numel()).view(p.sizes()));
  }
  if (shardSize_ > 1) free();
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

void FlatParameter::gather(dist::Communicator& comm, const std::string& what) {
  if (pendingGather_) {
    auto pending = std::move(pendingGather_);
    pending->wait();
    return;
  }
  if (gathered_) return;
  allocateFull();
  gathered_ = true;
  comm.allGather(full_, shard_.detach(), what);
}

void FlatParameter::beginGather(dist::Communicator& comm, const std::string& what) {
  if (gathered_) return;
  allocateFull();
  gathered_ = true;
  // full_ is a view of the storage the members share; the collective writes into it from Gloo's thread.
  pendingGather_ = comm.allGatherAsync(full_, shard_.detach(), what);
}

void FlatParameter::free() {
  if (pendingGather_) {  // never take memory away under a collective still writing into it
    auto pending = std::move(pendingGather_);
    pending->wait();
  }
  if (!gathered_ || shardSize_ == 1) return;  // a group of one: the members view the shard itself
  c10::StorageImpl* s = full_.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(at::DataPtr(nullptr, full_.device()));
  s->set_nbytes(0);
  gathered_ = false;
}

int64_t FlatParameter::gatheredBytes() const {
  return shardSize_ == 1 ? 0 : static_cast<int64_t>(full_.storage().nbytes());
}

struct FlatParameter::Reduction {
  torch::Tensor flat;  // the full-size gradient, alive until the collective is done
  torch::Tensor mine;  // this rank's summed chunk
  std::unique_ptr<dist::PendingCollective> pending;
  dist::Communicator* replicas = nullptr;  // still to all-reduce across (hybrid_shard)
  double scale = 1.0;
  std::string what;
};

FlatParameter::~FlatParameter() = default;

void FlatParameter::reduceGradients(dist::Communicator& comm, double scale, const std::string& what,
                                    dist::Communicator* replicas) {
  beginReduce(comm, scale, what, replicas);
  finishReduce();
}

void FlatParameter::beginReduce(dist::Communicator& comm, double scale, const std::string& what,
                                dist::Communicator* replicas) {
  TORCH_CHECK(trainable_, "FlatParameter::reduceGradients: frozen parameters have no gradients");
  TORCH_CHECK(!reduction_, "FlatParameter: a reduction of ", members_.front().name, " is still in flight");
  torch::NoGradGuard noGrad;
  auto r = std::make_unique<Reduction>();
  r->flat = torch::zeros({paddedNumel()}, full_.options());
  for (size_t i = 0; i < members_.size(); ++i) {
    auto& p = members_[i].param;
    const torch::Tensor g = p.grad();
    if (g.defined()) r->flat.narrow(0, offsets_[i], p.numel()).copy_(g.reshape({-1}));
    p.mutable_grad() = torch::Tensor();
  }
  r->scale = scale;
  r->what = what;
  const bool replicated = replicas && replicas->size() > 1;
  if (shardSize_ > 1) {
    r->mine = torch::empty({shardNumel_}, full_.options());
    r->pending = comm.reduceScatterAsync(r->mine, r->flat, dist::ReduceOp::kSum, what);
    r->replicas = replicated ? replicas : nullptr;
  } else {
    r->mine = r->flat;  // a shard group of one: the flat gradient is the shard's
    if (replicated) r->pending = replicas->allReduceAsync(r->mine, dist::ReduceOp::kSum, what + " across replicas");
  }
  reduction_ = std::move(r);
}

void FlatParameter::finishReduce() {
  if (!reduction_) return;
  torch::NoGradGuard noGrad;
  auto r = std::move(reduction_);
  if (r->pending) r->pending->wait();
  if (r->replicas) r->replicas->allReduce(r->mine, dist::ReduceOp::kSum, r->what + " across replicas");
  if (r->scale != 1.0) r->mine.mul_(r->scale);
  if (shard_.grad().defined()) {
    shard_.mutable_grad().add_(r->mine);
  } else {
    shard_.mutable_grad() = r->mine;
  }
}

}  // namespace fs::fsdp

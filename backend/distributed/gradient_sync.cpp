#include "backend/distributed/gradient_sync.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <map>

namespace fs::distributed {

struct GradientSync::Bucket {
  std::vector<size_t> params;   // indices into params_
  std::vector<int64_t> offset;  // element offset of each in `flat`
  torch::Tensor flat;
  size_t pending = 0;  // params not yet ready in this window
  std::unique_ptr<PendingCollective> work;
  bool launched = false;
};

// NOTE [Gradient buckets] in gradient_sync.h.
// The hooks outlive the GradientSync when the parameters do: they reach it
// through a link that the destructor clears.
class GradientSync::ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(std::shared_ptr<GradientSync*> link, size_t param) : link_(std::move(link)), param_(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (*link_) (*link_)->markReady(param_);
    return outputs;
  }

 private:
  std::shared_ptr<GradientSync*> link_;
  size_t param_;
};

GradientSync::GradientSync(std::shared_ptr<Communicator> comm, std::vector<torch::Tensor> params,
                           GradientSyncOptions options)
    : comm_(std::move(comm)), params_(std::move(params)) {
  // Reverse registration order, one run of buckets per dtype.
  std::map<c10::ScalarType, std::vector<size_t>> byDtype;
  for (size_t i = params_.size(); i-- > 0;) byDtype[params_[i].scalar_type()].push_back(i);
  bucketOf_.assign(params_.size(), 0);
  for (auto& [dtype, order] : byDtype) {
    std::unique_ptr<Bucket> b;
    int64_t bytes = 0;
    auto close = [&] {
      if (!b) return;
      b->flat = torch::zeros({b->offset.empty() ? 0 : bytes / static_cast<int64_t>(c10::elementSize(dtype))},
                             torch::TensorOptions().dtype(dtype).device(params_[b->params[0]].device()));
      buckets_.push_back(std::move(b));
      bytes = 0;
    };
    for (size_t i : order) {
      const int64_t n = params_[i].numel();
      const int64_t nbytes = n * static_cast<int64_t>(c10::elementSize(dtype));
      if (b && bytes + nbytes > options.bucketBytes) close();
      if (!b) b = std::make_unique<Bucket>();
      b->params.push_back(i);
      b->offset.push_back(bytes / static_cast<int64_t>(c10::elementSize(dtype)));
      bucketOf_[i] = buckets_.size();
      bytes += nbytes;
    }
    close();
  }
  stats_.buckets = static_cast<int64_t>(buckets_.size());
  link_ = std::make_shared<GradientSync*>(this);
  ready_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK(params_[i].requires_grad(), "GradientSync: parameter ", i, " does not require grad");
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    acc->add_post_hook(std::make_unique<ReadyHook>(link_, i));
    accumulators_.push_back(std::move(acc));
  }
}

GradientSync::~GradientSync() {
  *link_ = nullptr;
}

int64_t GradientSync::bucketBytes() const {
  int64_t bytes = 0;
  for (const auto& b : buckets_) bytes += static_cast<int64_t>(b->flat.nbytes());
  return bytes;
}

void GradientSync::broadcastFromRank0(Communicator& comm, const std::vector<torch::Tensor>& tensors,
                                      const std::string& what, int64_t chunkBytes) {
  if (comm.size() == 1) return;
  torch::NoGradGuard noGrad;
  // Small tensors travel together (a few collectives, not one per tensor); never a copy of the whole
  // model: at start-up the model is all a rank holds.
  std::map<c10::ScalarType, std::vector<torch::Tensor>> byDtype;
  for (const auto& t : tensors) {
    if (t.defined() && t.numel() > 0) byDtype[t.scalar_type()].push_back(t);
  }
  for (auto& [dtype, list] : byDtype) {
    std::vector<torch::Tensor> pending;
    int64_t pendingBytes = 0;
    const auto flush = [&] {
      if (pending.empty()) return;
      std::vector<torch::Tensor> flats;
      for (const auto& t : pending) flats.push_back(t.detach().reshape({-1}));
      torch::Tensor flat = torch::cat(flats);
      comm.broadcast(flat, 0, what);
      int64_t offset = 0;
      for (auto& t : pending) {
        t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));  // any strides
        offset += t.numel();
      }
      pending.clear();
      pendingBytes = 0;
    };
    for (const auto& t : list) {
      const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
      if (bytes >= chunkBytes && t.is_contiguous()) {
        torch::Tensor in = t.detach();
        comm.broadcast(in, 0, what);
        continue;
      }
      if (pendingBytes + bytes > chunkBytes) flush();
      pending.push_back(t);
      pendingBytes += bytes;
    }
    flush();
  }
}

void GradientSync::arm() {
  armed_ = true;
  nextLaunch_ = 0;
  stats_.launchedByHooks = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (auto& b : buckets_) {
    b->pending = b->params.size();
    b->launched = false;
    b->work.reset();
  }
}

void GradientSync::markReady(size_t param) {
  if (!armed_ || ready_[param]) return;
  ready_[param] = 1;
  Bucket& b = *buckets_[bucketOf_[param]];
  if (--b.pending == 0) launchReady();
}

void GradientSync::launchReady() {
  while (nextLaunch_ < buckets_.size() && buckets_[nextLaunch_]->pending == 0) {
    launch(nextLaunch_++);
    ++stats_.launchedByHooks;
  }
}

void GradientSync::launch(size_t index) {
  Bucket& b = *buckets_[index];
  torch::NoGradGuard noGrad;
  for (size_t k = 0; k < b.params.size(); ++k) {
    const torch::Tensor& p = params_[b.params[k]];
    auto slot = b.flat.narrow(0, b.offset[k], p.numel());
    const torch::Tensor g = p.grad();
    if (g.defined()) {
      slot.copy_(g.reshape({-1}));
    } else {
      slot.zero_();
    }
  }
  b.work = comm_->allReduceAsync(b.flat, ReduceOp::kSum, "ddp bucket " + std::to_string(index));
  b.launched = true;
}

void GradientSync::finish() {
  TORCH_CHECK(armed_, "GradientSync::finish without arm()");
  const auto t0 = std::chrono::steady_clock::now();
  armed_ = false;
  while (nextLaunch_ < buckets_.size()) launch(nextLaunch_++);
  torch::NoGradGuard noGrad;
  const double scale = 1.0 / comm_->size();
  for (auto& bp : buckets_) {
    Bucket& b = *bp;
    b.work->wait();
    b.work.reset();
    b.flat.mul_(scale);
    for (size_t k = 0; k < b.params.size(); ++k) {
      torch::Tensor p = params_[b.params[k]];
      auto slot = b.flat.narrow(0, b.offset[k], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(slot);
      } else {
        p.mutable_grad() = slot.clone();
      }
    }
  }
  stats_.finishSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fs::distributed

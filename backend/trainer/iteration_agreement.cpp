#include "backend/trainer/iteration_agreement.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace fs::trainer {

namespace {
constexpr size_t kClosingFields = 3;  // non-finite flag, loss x tokens, loss

double waitFor(std::unique_ptr<distributed::PendingCollective>& pending) {
  if (!pending) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  pending->wait();
  pending.reset();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

IterationAgreement::IterationAgreement(std::shared_ptr<distributed::Communicator> comm, bool compat)
    : comm_(comm && comm->size() > 1 ? std::move(comm) : nullptr),
      compat_(compat),
      world_(comm_ ? comm_->size() : 1) {}

// A collective still in flight must complete before its tensor goes away:
// an exception between open() and awaitOpening() leaves the run failing
// anyway, but never with Gloo writing into freed memory.
IterationAgreement::~IterationAgreement() {
  try {
    waitFor(pendingOpening_);
    waitFor(pendingClosing_);
  } catch (...) {
  }
}

void IterationAgreement::open(const std::vector<int64_t>& localTargets, const std::vector<double>* figures) {
  local_ = localTargets;
  global_ = localTargets;
  const size_t figureCount = figures ? figures->size() : 0;
  if (!comm_) {
    if (figures) gathered_ = *figures;
    return;
  }
  // float64 holds token counts exactly (below 2^53) beside the figures.
  std::vector<double> v(localTargets.begin(), localTargets.end());
  if (figures) {
    const size_t at = v.size() + static_cast<size_t>(comm_->rank()) * figureCount;
    v.resize(v.size() + static_cast<size_t>(world_) * figureCount, 0.0);
    std::copy(figures->begin(), figures->end(), v.begin() + static_cast<std::ptrdiff_t>(at));
  }
  opening_ = torch::tensor(v, torch::kFloat64);
  pendingOpening_ = comm_->allReduceAsync(opening_, distributed::ReduceOp::kSum, "iteration opening");
}

void IterationAgreement::awaitOpening() {
  if (!pendingOpening_) return;
  waitS_ += waitFor(pendingOpening_);
  const auto v = opening_.accessor<double, 1>();
  const size_t D = local_.size();
  for (size_t i = 0; i < D; ++i) global_[i] = std::llround(v[static_cast<int64_t>(i)]);
  const int64_t first = static_cast<int64_t>(D);
  gathered_.assign(opening_.data_ptr<double>() + first, opening_.data_ptr<double>() + opening_.numel());
}

double IterationAgreement::backwardScale(size_t d) const {
  if (compat_ || world_ == 1) return 1.0;
  const int64_t g = global_.at(d);
  return g > 0 ? static_cast<double>(world_) * static_cast<double>(local_.at(d)) / static_cast<double>(g)
               : 0.0;
}

void IterationAgreement::close(const std::vector<double>& localLoss) {
  const size_t D = localLoss.size();
  nonFinite_.assign(D, false);
  loss_.assign(D, 0.0);
  if (!comm_) {  // one rank: its own loss, no token weighting to do
    for (size_t i = 0; i < D; ++i) {
      nonFinite_[i] = !std::isfinite(localLoss[i]);
      loss_[i] = nonFinite_[i] ? 0.0 : localLoss[i];
    }
    return;
  }
  std::vector<double> v;
  for (size_t i = 0; i < D; ++i) {
    const double l = localLoss[i];
    const bool finite = std::isfinite(l);
    const double tokens = i < local_.size() ? static_cast<double>(local_[i]) : 0.0;
    v.insert(v.end(), {finite ? 0.0 : 1.0, finite ? l * tokens : 0.0, finite ? l : 0.0});
  }
  closing_ = torch::tensor(v, torch::kFloat64);
  pendingClosing_ = comm_->allReduceAsync(closing_, distributed::ReduceOp::kSum, "iteration closing");
}

void IterationAgreement::awaitClosing() {
  waitS_ += waitFor(pendingClosing_);
  if (!closing_.defined()) return;
  const auto v = closing_.accessor<double, 1>();
  for (size_t i = 0; i < nonFinite_.size(); ++i) {
    const auto at = [&](size_t k) { return v[static_cast<int64_t>(i * kClosingFields + k)]; };
    nonFinite_[i] = at(0) > 0;
    const int64_t g = i < global_.size() ? global_[i] : 0;
    if (compat_) {
      loss_[i] = at(2) / world_;
    } else {
      loss_[i] = g > 0 ? at(1) / static_cast<double>(g) : 0.0;
    }
  }
}

}  // namespace fs::trainer

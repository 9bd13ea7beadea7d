// The agreements of one training iteration, the only collectives besides
// the gradient reduction (NOTE [Distributed step] in trainer_dist.cpp).
//
// Both are launched asynchronously and waited for as late as possible, so
// their latency hides behind the forward and backward passes:
//  - the opening, launched before the first forward and waited for before
//    the first backward: each dataset's supervised-token count (known from
//    the labels alone) and, when the last step left any, every rank's
//    per-rank figures (a sum over slots, i.e. an all-gather riding on the
//    same collective);
//  - the closing, launched after the last forward and waited for after the
//    last backward: per dataset a non-finite flag, loss x tokens and loss.
// With no communicator (one rank) everything is local and nothing waits.
// Control requests are agreed before the iteration, in the data-ready round
// (data_ready_round.h), which also runs while a rank waits for data.
//
// Thread-safety: the rank's training thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/distributed/communicator.h"

namespace fs::trainer {

class IterationAgreement {
 public:
  // `comm`: the host group (NOTE [Host and device groups] in distributed/groups.h), or null with one rank.
  // `compat`: the reference's loss (mean of per-rank means, backward unscaled).
  IterationAgreement(std::shared_ptr<distributed::Communicator> comm, bool compat);
  ~IterationAgreement();
  IterationAgreement(const IterationAgreement&) = delete;
  IterationAgreement& operator=(const IterationAgreement&) = delete;

  // `localTargets`: supervised tokens per dataset (only read with several
  // ranks). `figures`: null, or this rank's per-rank figures; every rank
  // passes the same number of them (or null).
  void open(const std::vector<int64_t>& localTargets, const std::vector<double>* figures = nullptr);
  void awaitOpening();  // idempotent
  // After awaitOpening():
  int64_t globalTargets(size_t dataset) const { return global_.at(dataset); }
  // Multiplies this rank's mean loss before backward so that the average of
  // the ranks' gradients is the gradient of the mean over every supervised
  // token of the global batch (1 in compat mode or on one rank; 0 when no
  // rank has a target).
  double backwardScale(size_t dataset) const;
  // Every rank's figures, rank after rank (empty when open() had none).
  const std::vector<double>& gatheredFigures() const { return gathered_; }

  // `localLoss`: this rank's loss per dataset (NaN / inf allowed; 0 without targets).
  void close(const std::vector<double>& localLoss);
  void awaitClosing();  // idempotent
  // After awaitClosing():
  bool nonFinite(size_t dataset) const { return nonFinite_.at(dataset); }  // on any rank
  double loss(size_t dataset) const { return loss_.at(dataset); }          // the logged loss
  // Time spent blocked in awaitOpening() and awaitClosing().
  double waitSeconds() const { return waitS_; }

 private:
  std::shared_ptr<distributed::Communicator> comm_;  // null: one rank
  bool compat_;
  int world_ = 1;
  std::vector<int64_t> local_, global_;
  std::vector<double> loss_, gathered_;
  std::vector<bool> nonFinite_;
  at::Tensor opening_, closing_;
  std::unique_ptr<distributed::PendingCollective> pendingOpening_, pendingClosing_;
  double waitS_ = 0;
};

}  // namespace fs::trainer

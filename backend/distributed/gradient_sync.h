// DDP: replicated parameters, gradients averaged across the ranks of a
// communicator.
//
// NOTE [Gradient buckets]: trainable parameters are grouped, in reverse
// registration order (roughly the order backward produces them), into
// buckets of at most `bucketBytes` per dtype. A post-hook on each
// parameter's AccumulateGrad node marks the parameter ready once backward
// has written its gradient; when a bucket is complete and every bucket
// before it has been launched, its gradients are copied into one flat
// buffer and all-reduced asynchronously while backward goes on. Buckets are
// always launched in index order, so every rank issues the same collectives
// in the same order even when backward visits parameters differently (or a
// rank skips its backward: finish() launches what the hooks did not, with
// zeros for gradients this rank never produced). finish() waits, divides by
// the world size and writes the averages back into `.grad`.
//
// Hooks only act while armed: arm() before the backward pass that completes
// an accumulation window, so the micro-steps before it accumulate locally
// with no communication (DDP's no_sync), and finish() after it.
//
// Thread-safety: one training thread; hooks run on it (CPU autograd runs on
// the calling thread).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/distributed/communicator.h"

namespace fs::distributed {

struct GradientSyncOptions {
  int64_t bucketBytes = 25ll << 20;  // PyTorch DDP's default bucket_cap_mb
};

struct GradientSyncStats {
  int64_t buckets = 0;
  int64_t launchedByHooks = 0;  // in the last window: buckets started during backward
  double finishSeconds = 0;     // in the last window: time finish() spent waiting and copying back
};

class GradientSync {
 public:
  // `params`: the trainable parameters (each once, even if shared). `comm`: the
  // device group (NOTE [Host and device groups] in groups.h); the buckets live
  // on the parameters' device.
  GradientSync(std::shared_ptr<Communicator> comm, std::vector<torch::Tensor> params,
               GradientSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Copies rank 0's values into every rank's tensors (parameters, buffers):
  // tensors of one dtype coalesced into buffers of at most `chunkBytes`, a
  // larger contiguous tensor in place (start-up memory stays one model plus
  // one chunk).
  static void broadcastFromRank0(Communicator& comm, const std::vector<torch::Tensor>& tensors,
                                 const std::string& what, int64_t chunkBytes = int64_t{64} << 20);

  void arm();
  // REQUIRES: arm() was called for this window. Leaves every trainable
  // parameter with the rank-averaged gradient.
  void finish();
  bool armed() const { return armed_; }
  // The buckets' flat buffers: a second copy of every trainable gradient,
  // allocated once at construction (the memory event's grads count it).
  int64_t bucketBytes() const;
  const GradientSyncStats& stats() const { return stats_; }

 private:
  struct Bucket;
  class ReadyHook;
  void markReady(size_t param);
  void launchReady();
  void launch(size_t bucket);

  std::shared_ptr<Communicator> comm_;
  std::vector<torch::Tensor> params_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<size_t> bucketOf_;                                      // param index -> bucket
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // keeps the hooked nodes alive
  std::shared_ptr<GradientSync*> link_;  // shared with the hooks; null once destroyed
  std::vector<char> ready_;
  size_t nextLaunch_ = 0;
  bool armed_ = false;
  GradientSyncStats stats_;
};

}  // namespace fs::distributed

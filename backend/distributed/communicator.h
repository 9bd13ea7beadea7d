// The one small interface every distributed part of the engine uses (DDP
// now, FSDP next): the collectives of a group of ranks, with the LibTorch
// version differences hidden behind it.
//
// NOTE [Collectives on Debian's LibTorch 1.13]: its Gloo process group has
// no _allgather_base and no reduce_scatter. allGather maps onto Gloo's list
// allgather with views of the flat output; reduceScatter is an all-to-all of
// the input chunks followed by a local reduction in rank order (every rank
// adds the same numbers in the same order, so results are identical on all
// ranks and equal to the naive definition up to float addition order). The
// bandwidth is that of a ring reduce-scatter: (size-1)/size of the input.
//
// Errors: a collective that fails or times out throws CollectiveError whose
// message names the operation, its sequence number, this rank and, when a
// peer board is attached (heartbeat.h), what every peer was last doing.
//
// Thread-safety: one thread issues collectives on a communicator (the
// rank's training thread); all ranks of the group must issue the same
// collectives in the same order. tracker() may be read from any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "backend/distributed/collective_tracker.h"

namespace fs::distributed {

enum class ReduceOp { kSum, kMax, kMin };

class SharedShards;

class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A collective in flight (the *Async calls). Its tensors must stay alive and
// untouched by the caller until wait() returns; dropping it unwaited blocks
// until the collective is done (a peer that never joins then fails it at the
// group's timeout).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Blocks until the collective is done; a second call returns at once.
  // Throws CollectiveError.
  virtual void wait() = 0;
  // True when the input was copied as the collective was issued (the
  // shared-memory transport publishes a copy): the caller may then drop or
  // reuse the input before wait(); the output must still stay alive.
  virtual bool inputCopied() const { return false; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backendName() const = 0;  // "solo", "gloo", "nccl"

  // `what` names the collective in errors and heartbeats ("ddp bucket 3").
  // Tensors are contiguous, on the group's device.
  virtual void allReduce(at::Tensor& t, ReduceOp op, std::string_view what) = 0;
  // The tensor is reduced in place when wait() returns.
  virtual std::unique_ptr<PendingCollective> allReduceAsync(at::Tensor t, ReduceOp op, std::string what) = 0;
  virtual void broadcast(at::Tensor& t, int root, std::string_view what) = 0;
  // out = the concatenation of every rank's `in`, in rank order.
  // REQUIRES: out.numel() == size() * in.numel(), same dtype.
  virtual void allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) = 0;
  // allGather, filled when wait() returns (FSDP's prefetch).
  virtual std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor out, at::Tensor in,
                                                            std::string what) = 0;
  // out = chunk rank() of the element-wise reduction of every rank's `in`.
  // REQUIRES: in.numel() == size() * out.numel(), same dtype.
  virtual void reduceScatter(at::Tensor& out, const at::Tensor& in, ReduceOp op, std::string_view what) = 0;
  // reduceScatter, done when wait() returns (the local reduction of the
  // Gloo emulation runs inside wait(), on the caller's thread).
  virtual std::unique_ptr<PendingCollective> reduceScatterAsync(at::Tensor out, at::Tensor in, ReduceOp op,
                                                                std::string what) = 0;
  virtual void barrier(std::string_view what) = 0;

  // Sub-groups. Every rank of this group calls it with the same partition
  // of its ranks (ranks of this group); returns the group holding the
  // caller. `name` must be unique per call site (it keys the rendezvous).
  virtual std::shared_ptr<Communicator> split(const std::vector<std::vector<int>>& groups,
                                              const std::string& name) = 0;

  // Storage for FSDP shards that every rank of the group can read (NOTE
  // [Node-shared shards] in shared_shards.h), at least `bytes` in all, when
  // the group shares a node's memory; otherwise nullptr and the reason in
  // *why (when given). Every rank calls it at the same point, like a
  // collective.
  virtual std::unique_ptr<SharedShards> shareShards(uint64_t bytes, std::string* why);

  // How the collectives travel, for logs ("gloo + shared memory"; by
  // default backendName()).
  std::string transport() const { return transport_.empty() ? backendName() : transport_; }
  void setTransport(std::string t) { transport_ = std::move(t); }

  CollectiveTracker& tracker() { return tracker_; }
  // Appended to CollectiveError messages: what the peers were doing. A
  // communicator that delegates to another passes it on.
  virtual void setFailureDescriber(std::function<std::string()> f) { describeFailure_ = std::move(f); }

 protected:
  // allGather's and reduceScatter's REQUIREs, for every implementation:
  // TORCH_CHECK errors naming the operation and the sizes.
  void checkGatherArgs(const at::Tensor& out, const at::Tensor& in) const;
  void checkScatterArgs(const at::Tensor& out, const at::Tensor& in) const;
  [[noreturn]] void fail(std::string_view op, std::string_view what, int64_t seq,
                         const std::string& cause) const;
  CollectiveTracker tracker_;
  std::function<std::string()> describeFailure_;
  std::string transport_;
};

// The group of one process: every collective is the identity (copies where
// input and output differ).
std::shared_ptr<Communicator> makeSoloCommunicator();

// Partitions of `world` ranks laid out node by node with `perNode` ranks
// each: the ranks of each node, and the ranks with the same local rank.
// REQUIRES: world % perNode == 0.
std::vector<std::vector<int>> intraNodeGroups(int world, int perNode);
std::vector<std::vector<int>> interNodeGroups(int world, int perNode);

}  // namespace fs::distributed

// One flat parameter of an FSDP unit: the unit's parameters of one dtype and
// one requires-grad setting, concatenated, padded to a multiple of the shard
// group size and sharded: each rank keeps one contiguous chunk.
//
// NOTE [Freeing gathered storage]: the module's own parameter tensors stay
// what autograd and the model code see. Each becomes a view into one full
// (padded) buffer; gather() gives that buffer's storage memory and fills it
// by all-gathering the shards, free() takes the memory away again (the
// storage keeps its identity, with no bytes). Autograd's saved tensors hold
// the parameters themselves, i.e. the same storage, so a weight saved in
// forward is valid again once the unit is gathered for backward. Gathering
// writes through the buffer, not through the parameters, so their version
// counters do not move and autograd does not see an in-place change.
//
// A shard group of one (no_shard, one rank) without a cast: the shard is
// the full buffer, the members view it directly; gather and free do nothing
// and nothing counts as gathered.
//
// Gradients: backward leaves full-size gradients in the members' `.grad`;
// reduceGradients() flattens them (zeros for a member backward did not
// reach), reduce-scatters the sum across the shard group into this rank's
// chunk, scales it and adds it to the shard's `.grad`, then drops the
// full-size gradients. Frozen flat parameters never get gradients.
//
// NOTE [Mixed precision in a flat parameter] (the planner's NOTE [Planner
// dtypes]): a trainable flat parameter's shard is the optimizer's master
// copy, in the store dtype (optim.precision's weight dtype: bfloat16 under
// bf16, float16 under fp16, else the members' dtype), and so are its
// gradient and AdamW's state; with a gather dtype it is cast and the
// cast gathered, so the members (views of the full buffer) are in the
// gather dtype and so are their gradients. A frozen flat parameter is
// stored in the gather dtype from the start: it is never updated, so a
// master copy would only be cast again before every use. A cast flat
// parameter is gathered even in a shard group of one (the cast needs its
// own buffer). Gradients are reduced in the reduce dtype and added to the
// shard's gradient in the shard's dtype; a float16 reduction is scaled
// before the sum (its range is small), any other after.
//
// NOTE [CPU offload] (parallel.cpu_offload; PyTorch's CPUOffload(offload_params=True)): with
// FlatPlacement::offload the shard, its gradient and so the optimizer's state live in host memory
// (pinned when the members are on a CUDA device), while the full buffer stays on the members' (the
// compute) device. Each gather first copies the shard to that device (and casts it there), the
// all-gather runs there, and the full buffer holds device memory only while gathered, as always. A
// reduced gradient chunk is cast and scaled on the device, then copied to host memory and kept there
// ("landing") until landGradients() adds it to the shard's gradient. Every use goes through the copies
// even when the members are on the CPU too (host to host), which gains nothing there but runs the same
// logic as on a GPU: the CPU tests compare it bit for bit with shards kept in place. The full buffer is
// always gathered (the members cannot view a shard on another device), even in a shard group of one.
// With FlatPlacement::asyncCopies the copies are issued non_blocking: the caller then synchronizes the
// device before landGradients() and before writing the shard (ShardedModel does, NOTE [Streams around
// collectives] in sharded_model.h).
//
// Thread-safety: the rank's training thread (CPU autograd hooks run on it; CUDA's autograd thread runs
// them while the training thread waits in backward).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/distributed/communicator.h"

namespace fs::fsdp {

// The dtypes of NOTE [Mixed precision in a flat parameter]; unset: the members' dtype.
struct FlatDtypes {
  std::optional<c10::ScalarType> gather;
  std::optional<c10::ScalarType> reduce;
  std::optional<c10::ScalarType> store;  // a trainable shard's (the master copy's)
};

// Where a flat parameter's shard lives (NOTE [CPU offload]).
struct FlatPlacement {
  bool offload = false;      // the shard, its gradient and the optimizer's state in host memory
  bool asyncCopies = false;  // host <-> device copies non_blocking (the caller synchronizes)
  // The compute device: the full buffer's, and the shard's unless offloaded. Unset: the members'. A rank
  // that built shapes only holds its members on the host (NOTE [Values from the node's first rank] in
  // sharding_options.h) and must say where the model computes.
  std::optional<c10::Device> device;
};

struct FlatMember {
  std::string
      name;  // the parameter's path in the model, e.g. "lang_encoder.model.decoder.layers.0.fc1.weight"
  torch::Tensor param;  // the module's parameter (a leaf); re-pointed into the full buffer
};

class FlatParameter {
 public:
  // Delayed init: the most bytes a receiving rank holds of a flat parameter's values at once beyond its
  // shard.
  static constexpr int64_t kInitChunkBytes = int64_t{16} << 20;

  // Takes the members' current values as the unsharded values; with
  // `valuesFrom`, rank 0's members' values, broadcast over it in chunks of
  // kInitChunkBytes of which each rank keeps its shard (every rank of it
  // builds the same flat parameters in the same order; the others' members
  // are not read: delayed init). Every member must be a contiguous leaf of
  // the same dtype, device and requires-grad setting. Leaves the flat
  // parameter freed.
  // REQUIRES: 0 <= shardRank < shardSize; members not empty.
  FlatParameter(std::vector<FlatMember> members, int shardRank, int shardSize, FlatDtypes dtypes = {},
                distributed::Communicator* valuesFrom = nullptr, FlatPlacement placement = {});
  ~FlatParameter();
  FlatParameter(const FlatParameter&) = delete;
  FlatParameter& operator=(const FlatParameter&) = delete;

  const std::vector<FlatMember>& members() const { return members_; }
  int64_t numel() const { return numel_; }  // without padding
  int64_t paddedNumel() const { return shardNumel_ * shardSize_; }
  int64_t shardNumel() const { return shardNumel_; }
  int64_t padding() const { return paddedNumel() - numel_; }
  bool trainable() const { return trainable_; }
  // The members' dtype before they were flattened (what a checkpoint holds).
  c10::ScalarType modelDtype() const { return modelDtype_; }
  // The members' dtype now: the gather dtype (NOTE [Mixed precision in a flat parameter]).
  c10::ScalarType gatherDtype() const { return full_.scalar_type(); }
  c10::ScalarType reduceDtype() const { return reduceDtype_; }
  int64_t offsetOf(size_t member) const { return offsets_.at(member); }
  int64_t shardBytes() const { return shardNumel_ * static_cast<int64_t>(shard_.element_size()); }
  // The part of `member` this rank's shard holds: `length` elements from
  // `memberOffset` in the member, at `shardOffset` in the shard (length 0: none).
  struct LocalSlice {
    int64_t memberOffset = 0;
    int64_t shardOffset = 0;
    int64_t length = 0;
  };
  LocalSlice localSlice(size_t member) const;

  // Where the members (the full buffer) and the shard live: the same device unless offloaded.
  c10::Device computeDevice() const { return full_.device(); }
  c10::Device shardDevice() const { return shard_.device(); }
  bool offloaded() const { return placement_.offload; }

  // This rank's chunk (padding zeros at the end of the last chunk): a leaf
  // that requires grad when the members do; the optimizer steps it.
  torch::Tensor& shard() { return shard_; }
  const torch::Tensor& shard() const { return shard_; }

  // Gathered or being gathered (its full buffer has memory).
  bool gathered() const { return gathered_; }
  // Gives the full buffer memory and fills it from every rank's shard; the
  // members then hold the unsharded values. Waits for a gather begun by
  // beginGather(); otherwise a no-op when gathered.
  void gather(distributed::Communicator& comm, const std::string& what);
  // Gives the full buffer memory and starts filling it (a prefetch): the
  // members must not be read before gather() returns. No-op when gathered.
  void beginGather(distributed::Communicator& comm, const std::string& what);
  bool gathering() const { return pendingGather_ != nullptr; }
  // Releases the full buffer's memory (after waiting for a gather in
  // flight); the members keep their shapes but no data until the next
  // gather(). No-op when freed.
  void free();
  // Bytes the full buffer holds now (0 when freed).
  int64_t gatheredBytes() const;
  // Collective over the shard group: the unsharded values in the shard's
  // dtype (the master copy, not the gathered cast), padding included, in a
  // new buffer; the full buffer is left as it is.
  torch::Tensor gatherValues(distributed::Communicator& comm, const std::string& what) const;

  // REQUIRES: trainable(). Reduce-scatters the members' gradients (sum over
  // the shard group `comm`, then over `replicas` when given: hybrid and
  // no_shard) into the shard's gradient, multiplied by `scale` and added to
  // what is there; the members' gradients are dropped. With asyncCopies an
  // offloaded chunk is left landing (landGradients()).
  void reduceGradients(distributed::Communicator& comm, double scale, const std::string& what,
                       distributed::Communicator* replicas = nullptr);
  // reduceGradients in two halves: begin drops the members' gradients into
  // one flat buffer and starts the reduction; finish waits for it and adds
  // the result to the shard's gradient. `comm` and `replicas` must outlive
  // the reduction. A begin while one is in flight finishes that one first.
  void beginReduce(distributed::Communicator& comm, double scale, const std::string& what,
                   distributed::Communicator* replicas = nullptr);
  // Offloaded (NOTE [CPU offload]): finish leaves the chunk landing in host memory; landGradients()
  // adds what landed to the shard's gradient, in the order the reductions finished.
  void finishReduce();
  // REQUIRES: with asyncCopies, the device synchronized since the last finishReduce().
  void landGradients();
  bool reducing() const { return reduction_ != nullptr || !landing_.empty(); }
  // A reduction in flight that still holds a full-size gradient (the
  // transport did not copy it at issue, distributed::PendingCollective::inputCopied,
  // or a shard group of one all-reduces it in place).
  bool reductionHoldsInput() const;

  // NOTE [Node-shared shards] (distributed/shared_shards.h): the padded buffer
  // lives at `offset` of `store` (in the shard's dtype), this rank's shard
  // moved into its part of it; the shard stays the same leaf tensor for the
  // optimizer. From then on gather() needs no collective (the caller keeps
  // the store's write protocol): the members view the buffer in place, or,
  // with a cast (NOTE [Mixed precision in a flat parameter]), a private cast
  // copy of it. `store` must outlive this flat parameter.
  // REQUIRES: the store's group is the shard group, not gathered.
  void moveShardInto(distributed::SharedShards& store, uint64_t offset);

 private:
  void allocateFull();
  // The shard on the compute device (a copy when offloaded), in the full buffer's dtype when `cast`.
  torch::Tensor shardOnDevice(bool cast) const;
  // The gradient chunk added to the shard's gradient.
  void addToShardGradient(const torch::Tensor& chunk);
  void gatherShared();

  std::vector<FlatMember> members_;
  std::vector<int64_t> offsets_;
  int64_t numel_ = 0;
  int64_t shardNumel_ = 0;
  int shardRank_ = 0;
  int shardSize_ = 1;
  bool trainable_ = false;
  bool cast_ = false;         // the full buffer's dtype differs from the shard's
  bool needsGather_ = false;  // sharded, cast or offloaded: the members do not view the shard itself
  FlatPlacement placement_;
  c10::ScalarType modelDtype_ = c10::ScalarType::Float;
  c10::ScalarType reduceDtype_ = c10::ScalarType::Float;
  bool gathered_ = true;
  torch::Tensor full_;   // (paddedNumel): the storage the members view
  torch::Tensor shard_;  // (shardNumel)
  std::unique_ptr<distributed::PendingCollective> pendingGather_;
  uint8_t* shared_ = nullptr;  // the padded buffer in the node's segment (NOTE [Node-shared shards])
  struct Reduction;
  std::unique_ptr<Reduction> reduction_;
  std::vector<torch::Tensor> landing_;  // offloaded: reduced chunks copied to host memory, not yet added
};

}  // namespace fs::fsdp

// A model sharded unit by unit over a communicator, with the strategies of
// NOTE [Sharding strategies] below.
//
// NOTE [Unit lifecycle]: the model announces each wrapped module through
// its unit hooks (model/unit_hooks.h). In forward, before(): gather the
// unit; after(): free it again (full_shard, hybrid_shard; under every
// strategy but no_shard when its forward built no graph) and hook the
// output's gradient, so the unit is gathered again just before its
// backward; a hook on the input's gradient frees it once its backward is
// done; a unit whose input takes no gradient (an embedding lookup) is done
// once every trainable member's gradient is complete. When one unit's input is the previous unit's output
// (consecutive layers) both hooks sit on one gradient: a single hook there ends the later unit's backward
// before it gathers the earlier one, so the two are never gathered at once for want of ordering. Everything
// not in a unit (embeddings, final norm, head) forms the root unit, gathered from beginForward() to
// finishBackward(). Inside activation-checkpointed regions the forward runs without a graph, so the recompute
// during backward gathers the unit (before() in the backward phase only gathers). With reduceDuringBackward
// on, a unit announced once per forward is reduce-scattered from that input-gradient hook, so its full-size
// gradients live only while its backward runs (autograd runs a parameter's AccumulateGrad as soon as it is
// ready, before the node the input's hook sits on). finishBackward() reduce-scatters every trainable unit not
// done yet (the root, units without an input gradient, units announced twice such as a tied embedding) and
// frees what is still gathered.
//
// A unit whose module the model never announces (UnitSpec::justInTime
// false) is gathered with the root. Units may nest: a parameter belongs to
// the innermost unit around it, as in torch's FSDP.
//
// NOTE [Prefetch and the gather limit]: each pass records the order its
// units are gathered in (forward: announcements; backward: the gathers its
// hooks ask for); the next pass of the same kind starts gathering the unit
// that came next last time (an asynchronous all-gather) while the current
// one computes: in forward right after the current unit's gather
// (forwardPrefetch), in backward right after it (BackwardPrefetch::kPre) or
// once the current unit's backward is done, before its reduce-scatter
// (kPost). A prefetch is skipped when it would make more than
// limitAllGathers units (the root not counted) gathered or in flight at
// once. A gather the computation needs always happens: only nested units
// (whose parent stays gathered) or shard_grad_op (every unit kept from its
// forward to its backward) can then hold more than the limit.
// Gradient reductions are asynchronous too: a unit's reduce-scatter runs
// while the next unit's backward computes, and is waited for when the next
// reduction starts or at finishBackward() (one in flight at a time).
//
// NOTE [Streams around collectives] (runtime/device_stream.h; on the CPU every
// call below is a no-op: NOTE [No-op streams]). A NCCL process group runs each
// collective on its own internal stream: at issue that stream waits for the
// issuing thread's current stream, and it keeps the input and output tensors'
// memory from being handed out again before it is done (recordStream on its
// stream; 2.x may instead hold them in the work until wait()); wait() makes
// the then current stream (not the host) wait for the collective, unless
// blocking wait is on. That alone would order everything, but
// on one stream: a collective issued while the compute stream is current
// waits for all the compute queued before it (on a GPU the host runs far
// ahead), and the copies and casts around it queue between the compute.
// What our communication stream adds:
//  - A unit's gather (and prefetch) is issued with the communication stream
//    current: the offloaded shard's copy to the device (NOTE [CPU offload]),
//    the cast to the gather dtype, the full buffer's allocation and the wait
//    for the all-gather run there, so the collective waits only for its own
//    inputs. The compute stream then waits for an event recorded on the
//    communication stream, before the unit's forward or backward is queued,
//    and the full buffer (allocated on the communication stream) is recorded
//    on the compute stream, so that once freed its memory is not handed out
//    again before the compute queued on it is done.
//  - A reduction first makes the communication stream wait for the compute
//    stream (the members' gradients are complete there), records each member
//    gradient on the communication stream (they are dropped on the host while
//    it still reads them), then flattens them, issues the reduce-scatter,
//    and at its finish casts, scales and adds the chunk to the shard's
//    gradient (offloaded: copies it to host memory) on the communication
//    stream.
//  - beginForward() makes the communication stream wait for the compute
//    stream (the optimizer wrote the shards there); settleGradients() makes
//    the compute stream wait for the communication stream and records the
//    shards' gradients on it (the optimizer reads them there), or, with
//    offloaded shards, makes the host wait for the device: the gradient
//    chunks have landed in host memory before they are added to the shards'
//    gradients, and no copy of a shard to the device is still reading it when
//    the optimizer steps on the CPU next. Gloo and the shared-memory transport
//    finish on the host inside wait(), so on the CPU nothing of this is needed.
// Relied on: each stream runs its work in issue order; an event orders two
// streams; NCCL's issue-time wait and wait()'s stream wait above; the work a
// communicator does inside wait() (the reduce-scatter emulation's local sum,
// a bfloat16 write-back: NOTE [Collectives on Debian's LibTorch 1.13]) runs
// on the then current stream, the communication stream; autograd runs each
// backward node on the stream its forward ran on (the compute stream, where
// the hooks find it current); and the host issues all of it in program order.
//
// Every rank runs the same graph in the same order (CPU autograd runs on
// the calling thread; CUDA's runs the hooks on its device thread, one at a
// time), so the collectives issued from hooks and the
// prefetch decisions (made from the same recorded orders) line up.
// Units that are not nested must not share parameters (tied parameters
// belong in one unit).
//
// Thread-safety: the rank's training thread.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/distributed/communicator.h"
#include "backend/fsdp/flat_param.h"
#include "backend/fsdp/node_shard_store.h"
#include "backend/fsdp/shard_groups.h"
#include "backend/fsdp/sharding_options.h"
#include "backend/fsdp/unit_members.h"
#include "backend/model/unit_hooks.h"
#include "backend/runtime/device_stream.h"

namespace fs::fsdp {

class ShardedModel final : public model::UnitHooks {
 public:
  struct Unit {
    std::string path;
    torch::nn::Module* module = nullptr;                // null for the root unit
    std::vector<std::unique_ptr<FlatParameter>> flats;  // one per requires-grad setting (and group) present
    bool justInTime = true;                             // false: gathered with the root
  };

  // Moves every parameter of `root` into the flat parameters of its unit;
  // `units` must be disjoint modules inside `root`. Throws c10::Error naming
  // a parameter two units claim.
  // Every rank calls it at the same point (hybrid_shard and no_shard split
  // the communicator). `comm` carries tensors on the model's device only (the
  // rank's device group: NOTE [Host and device groups] in distributed/groups.h).
  ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> units,
               std::shared_ptr<distributed::Communicator> comm, ShardingOptions options = {});
  ~ShardedModel() override;
  const ShardingOptions& options() const { return options_; }
  // The ranks the parameters are sharded over (solo under no_shard).
  distributed::Communicator& shardGroup() const { return *shardComm_; }

  const std::vector<Unit>& units() const { return units_; }  // the root unit last
  // Where the model's parameters (gathered units) live, and where the shards do: the same device
  // unless offloadShards (host memory).
  c10::Device computeDevice() const { return streams_.device(); }
  c10::Device shardDevice() const {
    return options_.offloadShards ? c10::Device(c10::kCPU) : computeDevice();
  }
  // NOTE [Streams around collectives]
  const runtime::DeviceStreams& streams() const { return streams_; }
  // The trainable shards, for the optimizer.
  std::vector<torch::Tensor> trainableShards() const;
  // Full bytes gathered now, over every unit, and the most since resetPeak().
  int64_t gatheredBytes() const;
  int64_t peakGatheredBytes() const { return peakGathered_; }
  // Bytes of the trainable shards' gradients, the most held after a backward since resetPeak()
  // (the optimizer drops them after its step).
  int64_t peakShardGradientBytes() const { return peakShardGrads_; }
  // Units (not the root) gathered or in flight now, and the most since resetPeak().
  int unitsGathered() const;
  int peakUnitsGathered() const { return peakUnits_; }
  // Which units (indices into units(), ascending) were gathered or in flight together the first time
  // peakUnitsGathered() was reached since resetPeak(): the gather window a telemetry report shows, since
  // between steps nothing but the root is gathered. Taken at the units peak, not the bytes peak, so it has
  // exactly peakUnitsGathered() entries.
  const std::vector<size_t>& unitsAtPeak() const { return unitsAtPeak_; }
  void resetPeak() {
    peakGathered_ = gatheredBytes();
    unitsAtPeak_ = gatheredUnits();
    peakUnits_ = static_cast<int>(unitsAtPeak_.size());
    peakShardGrads_ = 0;
  }
  // Bytes of this rank's shards (frozen and trainable).
  int64_t shardBytes() const;
  // Whether the shards live in node-shared memory (NOTE [Node-shared shards]); if not, why.
  bool shardsShared() const { return shards_.shared(); }
  const std::string& whyShardsNotShared() const { return shards_.whyNotShared(); }
  // Around every write of the shards' values (the optimizer's step), on every rank the same number of
  // times: begin waits until no rank reads the current values any more, end makes the new ones readable.
  // No-ops without node-shared shards. A shard written outside them makes the next beginForward() throw.
  void beginShardWrite();
  void endShardWrite();
  // Seconds the host spent in gathers and gradient reductions since the last call (the step's
  // communication on the CPU, where none of it overlaps compute; on a GPU only issuing and ordering
  // the work: NOTE [Streams around collectives]).
  double takeCommSeconds();

  void beginForward();
  // Gradients are summed over ranks, times `scale`, into the shards' gradients.
  void beginBackward(double scale = 1.0);
  // After backward: every unit's gradients reduce-scattered (with `settle`, waited for and in the shards'
  // gradients; without, reductions whose transport copied their input may still be in flight: call
  // settleGradients() before reading the shards' gradients); every unit freed.
  void finishBackward(bool settle = true);
  // Waits for every reduction in flight: the shards' gradients are complete. Without node-shared
  // shards a pass's gathers meet the peers anyway, so leaving reductions in flight gains nothing.
  void settleGradients();
  // Off by default: a caller that reads the members' full-size gradients
  // after backward (a gradient-flow check) needs them all until finishBackward.
  void setReduceDuringBackward(bool on) { reduceDuringBackward_ = on; }

  // Collective over the shard group: |gradient| summed per trainable
  // parameter, from the shards' gradients (0 for a flat without gradient).
  std::map<std::string, double> gradientAbsSums();
  // After a forward without backward (evaluation): every unit freed.
  void finishForward();

  // Collective over the shard group: the current values of the given model
  // parameters (any subset, in the given order), assembled from the shards.
  // Throws c10::Error for a tensor that is not a parameter of the model.
  std::vector<torch::Tensor> parameterValues(const std::vector<torch::Tensor>& params);
  // Collective: every parameter's full value in the model's parameter order,
  // gathered one flat parameter at a time (never the whole model gathered at
  // once) from the shards, in the dtype the model built it in (trainable
  // ones: the master copy; frozen ones stored in a lower gather dtype come
  // back with that dtype's values); copies are kept only when `keep` (rank 0
  // writing a checkpoint).
  std::vector<std::pair<std::string, torch::Tensor>> fullParameters(bool keep);

  void before(torch::nn::Module& module, const at::Tensor& input) override;
  void after(torch::nn::Module& module, const at::Tensor& output) override;

 private:
  enum class Phase { kIdle, kForward, kBackward };
  // A pass's units in gather order: the previous pass's order and this one's so far.
  struct PassOrder {
    std::vector<size_t> previous, now;
    void begin() {
      if (!now.empty()) previous = std::move(now);
      now.clear();
    }
    // Records `unit`; returns the unit that followed it last time, if any.
    std::optional<size_t> next(size_t unit);
  };
  // Construction: the flat parameters of every unit, then the leaf hooks of their trainable members.
  void buildUnits(const std::vector<UnitSpec>& specs, UnitMembers& members, const ShardGroups& groups);
  void registerGradientHooks();
  void gather(Unit& u);
  void prefetch(std::optional<size_t> unit);
  void free(Unit& u);
  // Starts the unit's gradient reduction (first finishing those in flight that hold a full-size gradient).
  void reduce(size_t unit);
  // Finishes the reductions in flight; with `holdingInputs`, only those still holding a full-size gradient.
  void finishReductions(bool holdingInputs = false);
  void freeAll();
  void noteGathered();
  // `t` on the device the collectives run on (a copy only when it is elsewhere).
  torch::Tensor onCommDevice(const torch::Tensor& t) const;
  std::vector<size_t> gatheredUnits() const;  // what unitsGathered() counts
  // Backward hooks: a unit's backward begins (its output's gradient exists) or ends (its input's).
  void beginUnitBackward(size_t unit);
  void endUnitBackward(size_t unit);
  // A trainable member's gradient is complete (its leaf hook).
  void gradientArrived(size_t unit);
  void reduceDeferred();

  bool freeAfterForward() const;

  std::shared_ptr<distributed::Communicator> comm_;
  ShardingOptions options_;
  runtime::DeviceStreams streams_;  // of computeDevice()
  // Before units_: the flat parameters' shards point into its segment.
  NodeShardStore shards_;
  std::shared_ptr<distributed::Communicator> shardComm_;      // where parameters are sharded
  std::shared_ptr<distributed::Communicator> replicateComm_;  // null: no replicas
  // NOTE [Values from the node's first rank]: throws naming the first flat parameter whose hash
  // (`hashes`, one per flat parameter in build order; 0 where this rank sent nothing) differs between
  // nodes of `perNode` ranks.
  void checkNodesAgree(const std::vector<int64_t>& hashes, const std::vector<std::string>& names,
                       int perNode) const;
  std::vector<Unit> units_;
  std::map<const torch::nn::Module*, size_t> unitOf_;
  std::vector<std::string> order_;  // parameter names in the model's order
  struct MemberOf {
    const FlatParameter* flat = nullptr;
    size_t member = 0;
  };
  std::map<const c10::TensorImpl*, MemberOf> memberOf_;  // a parameter's place (its impl survives set_data)
  Phase phase_ = Phase::kIdle;
  int64_t peakGathered_ = 0;
  bool reduceDuringBackward_ = false;
  double commSeconds_ = 0;
  double gradScale_ = 1.0;
  int peakUnits_ = 0;
  std::vector<size_t> unitsAtPeak_;
  int64_t peakShardGrads_ = 0;
  PassOrder forwardOrder_, backwardOrder_;
  std::vector<std::optional<size_t>> nextInBackward_;  // per unit: what followed it in the last backward
  std::vector<int> visits_;                            // per unit: announcements in this forward
  std::vector<bool> reduced_;                          // per unit: reduced in this backward
  std::vector<bool> endsOnGradients_;  // per unit: its backward ends when its members' gradients are complete
  std::vector<int> arrived_;           // per unit: trainable members whose gradient is complete
  std::vector<int> trainableMembers_;  // per unit (just-in-time units only)
  std::vector<size_t> reducing_;       // units whose reduction is in flight
  std::vector<size_t> deferredReduce_;  // units whose gradients are complete once the current hook returns
  // This forward's unit outputs by gradient edge (grad_fn, output_nr): the units whose backward ends
  // where that output's gradient arrives, ended by the output's hook before it gathers its own unit.
  // Each entry holds its grad_fn so that no other node takes its address before the map is cleared.
  struct OutputEdge {
    std::shared_ptr<torch::autograd::Node> node;
    std::shared_ptr<std::vector<size_t>> endsFirst;
  };
  std::map<std::pair<const void*, uint32_t>, OutputEdge> outputEdges_;
};

}  // namespace fs::fsdp

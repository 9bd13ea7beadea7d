#include "backend/fsdp/sharded_model.h"

#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <chrono>
#include <set>

#include "backend/telemetry/memory_tracker.h"
#include "backend/tensorfile/content_hash.h"

namespace fs::fsdp {
namespace {

// The unit's parameters were just moved into its flat parameters and their old storage freed; glibc keeps
// freed heap memory resident unless asked, and start-up is when a rank's memory moves the most (the
// model built whole, then shard by shard: NOTE [Values from the node's first rank]). Gives it back to the
// system so that a node's resident memory follows what the ranks really hold.
void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// The device the model's parameters are on (the CPU for a model without any).
c10::Device deviceOf(torch::nn::Module& root) {
  for (const auto& p : root.parameters()) return p.device();
  return c10::Device(c10::kCPU);
}

}  // namespace

ShardedModel::ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> specs,
                           std::shared_ptr<distributed::Communicator> comm, ShardingOptions options)
    : comm_(std::move(comm)), options_(options), streams_(options.device.value_or(deviceOf(root))) {
  const ShardGroups groups = makeShardGroups(comm_, options_);
  shardComm_ = groups.shard;
  replicateComm_ = groups.replicate;
  UnitMembers members = assignUnitMembers(root, specs, options_.trainableGroup);
  order_ = std::move(members.order);
  buildUnits(specs, members, groups);
  if (options_.offloadShards) {
    shards_.keepPrivate("parallel.cpu_offload: every gather copies the shard from host memory");
  } else if (options_.sharedShards) {
    std::vector<NodeShardStore::Flat> flats;
    for (auto& u : units_) {
      for (auto& f : u.flats) flats.push_back({f.get(), u.path});
    }
    shards_.share(*shardComm_, std::move(flats));
  } else {
    shards_.keepPrivate("turned off (parallel.shared_shards: false)");
  }
  visits_.assign(units_.size(), 0);
  reduced_.assign(units_.size(), false);
  endsOnGradients_.assign(units_.size(), false);
  arrived_.assign(units_.size(), 0);
  registerGradientHooks();
}

// Moves each unit's members into its flat parameters, one unit at a time (NOTE [Values from the node's first
// rank]: broadcast as they are built), the root unit last.
void ShardedModel::buildUnits(const std::vector<UnitSpec>& specs, UnitMembers& members,
                              const ShardGroups& groups) {
  const bool severalNodes = groups.valuesFromSeveralNodes(comm_->size());  // their values are compared
  std::vector<int64_t> valueHashes;
  std::vector<std::string> flatNames;
  for (size_t u = 0; u <= specs.size(); ++u) {
    Unit unit;
    unit.path = u < specs.size() ? specs[u].path : "(root)";
    unit.module = u < specs.size() ? specs[u].module.get() : nullptr;
    unit.justInTime = u < specs.size() && specs[u].justInTime;
    for (auto& [key, list] : members.units[u]) {
      if (severalNodes) {
        uint64_t h = 0;  // chained over the members' bytes, on the rank whose values are broadcast
        for (const auto& m : list) {
          if (groups.valuesFrom->rank() != 0) break;
          const auto* bytes = static_cast<const std::byte*>(m.param.data_ptr());
          h = tensorfile::xxh64({bytes, static_cast<size_t>(m.param.numel()) * m.param.element_size()}, h);
        }
        valueHashes.push_back(static_cast<int64_t>(h));
        flatNames.push_back(unit.path + " (" + list.front().name + ", " + std::to_string(list.size()) +
                            " tensors)");
      }
      unit.flats.push_back(std::make_unique<FlatParameter>(
          std::move(list), shardComm_->rank(), shardComm_->size(), options_.dtypes, groups.valuesFrom.get(),
          FlatPlacement{options_.offloadShards, /*asyncCopies=*/streams_.active(), computeDevice()}));
      const FlatParameter& f = *unit.flats.back();
      for (size_t m = 0; m < f.members().size(); ++m)
        memberOf_[f.members()[m].param.unsafeGetTensorImpl()] = {&f, m};
    }
    if (unit.justInTime) unitOf_[unit.module] = units_.size();
    units_.push_back(std::move(unit));
    returnFreedMemory();
  }
  if (severalNodes) checkNodesAgree(valueHashes, flatNames, groups.valuesFrom->size());
}

void ShardedModel::registerGradientHooks() {
  trainableMembers_.assign(units_.size(), 0);
  for (size_t i = 0; i < units_.size(); ++i) {
    if (!units_[i].justInTime) continue;
    for (auto& f : units_[i].flats) {
      if (!f->trainable()) continue;
      for (const auto& m : f->members()) {
        ++trainableMembers_[i];
        // A leaf's hook runs once per backward, with every contribution to its gradient summed, and
        // once more inside a checkpointed region's own gradient call (NOTE [Leaf hooks in the recompute]).
        torch::Tensor param = m.param;
        param.register_hook([this, i](const at::Tensor& g) {
          if (!model::takingRecomputeGradients()) gradientArrived(i);
          return g;
        });
      }
    }
  }
}

ShardedModel::~ShardedModel() = default;

void ShardedModel::beginShardWrite() {
  shards_.beginWrite();
}

void ShardedModel::endShardWrite() {
  shards_.endWrite();
}

void ShardedModel::checkNodesAgree(const std::vector<int64_t>& hashes, const std::vector<std::string>& names,
                                   int perNode) const {
  const int world = comm_->size();
  const auto n = static_cast<int64_t>(hashes.size());
  torch::Tensor mine = onCommDevice(torch::tensor(hashes, torch::kInt64));
  torch::Tensor all = torch::empty({world * n}, mine.options());
  comm_->allGather(all, mine, "delayed init: values of every node");
  if (!all.is_cpu()) all = all.to(torch::kCPU);
  const auto* h = all.data_ptr<int64_t>();
  for (int64_t f = 0; f < n; ++f) {
    for (int node = 1; node < world / perNode; ++node) {
      if (h[node * perNode * n + f] == h[f]) continue;
      TORCH_CHECK(
          false, "delayed init: ranks 0 and ", node * perNode, " (the first ranks of nodes 0 and ", node,
          ") built different initial values for ", names[f],
          ": each node reads the weights and initialises the model itself, so the weights files (or the "
          "engine builds) must be the same on every node; or set parallel.delayed_init=false to broadcast "
          "rank 0's");
    }
  }
}

std::vector<torch::Tensor> ShardedModel::trainableShards() const {
  std::vector<torch::Tensor> out;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) {
      if (f->trainable()) out.push_back(f->shard());
    }
  }
  return out;
}

int64_t ShardedModel::gatheredBytes() const {
  int64_t n = 0;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) n += f->gatheredBytes();
  }
  return n;
}

int64_t ShardedModel::shardBytes() const {
  int64_t n = 0;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) n += f->shardBytes();
  }
  return n;
}

bool ShardedModel::freeAfterForward() const {
  return options_.strategy == Strategy::kFullShard || options_.strategy == Strategy::kHybridShard;
}

double ShardedModel::takeCommSeconds() {
  const double s = commSeconds_;
  commSeconds_ = 0;
  return s;
}

std::optional<size_t> ShardedModel::PassOrder::next(size_t unit) {
  const size_t p = now.size();
  now.push_back(unit);
  if (p + 1 < previous.size() && previous[p] == unit) return previous[p + 1];
  return std::nullopt;
}

std::vector<size_t> ShardedModel::gatheredUnits() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    if (!u.justInTime) continue;  // the root, and units held with it
    if (std::any_of(u.flats.begin(), u.flats.end(), [](const auto& f) { return f->gatheredBytes() > 0; })) {
      out.push_back(i);
    }
  }
  return out;
}

int ShardedModel::unitsGathered() const {
  return static_cast<int>(gatheredUnits().size());
}

void ShardedModel::noteGathered() {
  peakGathered_ = std::max(peakGathered_, gatheredBytes());
  // Only a new peak replaces the set: it stays the first moment the window was that wide.
  auto now = gatheredUnits();
  if (static_cast<int>(now.size()) > peakUnits_) {
    peakUnits_ = static_cast<int>(now.size());
    unitsAtPeak_ = std::move(now);
  }
}

torch::Tensor ShardedModel::onCommDevice(const torch::Tensor& t) const {
  return t.device() == computeDevice() ? t : t.to(computeDevice());
}

void ShardedModel::gather(Unit& u) {
  const bool needed = std::any_of(u.flats.begin(), u.flats.end(),
                                  [](const auto& f) { return !f->gathered() || f->gathering(); });
  if (!needed) return;
  // Counted as gathered memory, not as the activations of the forward that asked for it.
  telemetry::MemoryPhase phase(telemetry::Phase::kGathered);
  const auto t0 = std::chrono::steady_clock::now();
  shards_.awaitWritten(u.path);
  const c10::Stream compute = streams_.current();
  {
    // NOTE [Streams around collectives]: issued, or waited for, on the communication stream.
    runtime::StreamScope onComm(streams_, streams_.communication());
    for (auto& f : u.flats) f->gather(*shardComm_, "gather " + u.path);
  }
  if (streams_.active()) {
    streams_.waitFor(compute, streams_.communication());
    for (auto& f : u.flats) streams_.recordTensor(f->members().front().param, compute);  // the full buffer
  }
  commSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  noteGathered();
}

void ShardedModel::prefetch(std::optional<size_t> unit) {
  // A gather from node-shared shards moves nothing between ranks (a mapping, or a cast on this thread):
  // there is nothing to overlap, and gathering early only holds the unit longer (NOTE [Node-shared shards]).
  if (!unit || shards_.shared()) return;
  Unit& u = units_[*unit];
  if (std::all_of(u.flats.begin(), u.flats.end(), [](const auto& f) { return f->gathered(); })) return;
  if (options_.limitAllGathers > 0 && unitsGathered() >= options_.limitAllGathers) return;
  telemetry::MemoryPhase phase(telemetry::Phase::kGathered);
  const auto t0 = std::chrono::steady_clock::now();
  {
    runtime::StreamScope onComm(streams_, streams_.communication());  // NOTE [Streams around collectives]
    for (auto& f : u.flats) f->beginGather(*shardComm_, "prefetch " + u.path);
  }
  commSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  noteGathered();
}

void ShardedModel::freeAll() {
  for (auto& u : units_) free(u);
}

void ShardedModel::free(Unit& u) {
  runtime::StreamScope onComm(streams_, streams_.communication());  // a prefetch in flight is waited there
  for (auto& f : u.flats) f->free();
}

void ShardedModel::beginForward() {
  shards_.checkUnwritten();
  streams_.waitFor(streams_.communication(), streams_.current());  // the optimizer wrote the shards there
  phase_ = Phase::kForward;
  visits_.assign(units_.size(), 0);
  endsOnGradients_.assign(units_.size(), false);
  forwardOrder_.begin();
  outputEdges_.clear();
  for (auto& u : units_) {
    if (!u.justInTime) gather(u);
  }
}

void ShardedModel::finishForward() {
  freeAll();
  outputEdges_.clear();
  phase_ = Phase::kIdle;
}

void ShardedModel::beginBackward(double scale) {
  phase_ = Phase::kBackward;
  gradScale_ = scale;
  reduced_.assign(units_.size(), false);
  backwardOrder_.begin();
  nextInBackward_.assign(units_.size(), std::nullopt);
  arrived_.assign(units_.size(), 0);
  deferredReduce_.clear();
}

void ShardedModel::reduce(size_t i) {
  if (reduced_[i]) return;
  reduced_[i] = true;
  // At most one full-size gradient in flight: the only extra memory. Reductions whose transport copied
  // their input hold just this rank's chunk and stay in flight (NOTE [Node-shared shards]).
  finishReductions(/*holdingInputs=*/true);
  Unit& u = units_[i];
  telemetry::MemoryPhase phase(telemetry::Phase::kGradients);
  const auto t0 = std::chrono::steady_clock::now();
  // NOTE [Streams around collectives]: the gradients are complete on the compute stream and read (then
  // dropped) on the communication stream.
  const c10::Stream comm = streams_.communication();
  if (streams_.active()) {
    streams_.waitFor(comm, streams_.current());
    for (const auto& f : u.flats) {
      if (!f->trainable()) continue;
      for (const auto& m : f->members()) streams_.recordTensor(m.param.grad(), comm);
    }
  }
  {
    runtime::StreamScope onComm(streams_, comm);
    for (auto& f : u.flats) {
      if (f->trainable())
        f->beginReduce(*shardComm_, gradScale_, "reduce-scatter " + u.path, replicateComm_.get());
    }
  }
  if (std::find(reducing_.begin(), reducing_.end(), i) == reducing_.end()) reducing_.push_back(i);
  commSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void ShardedModel::finishReductions(bool holdingInputs) {
  if (reducing_.empty()) return;
  telemetry::MemoryPhase phase(telemetry::Phase::kGradients);
  const auto t0 = std::chrono::steady_clock::now();
  runtime::StreamScope onComm(streams_, streams_.communication());  // NOTE [Streams around collectives]
  std::vector<size_t> left;
  for (size_t i : reducing_) {
    auto& flats = units_[i].flats;
    if (holdingInputs &&
        std::none_of(flats.begin(), flats.end(), [](const auto& f) { return f->reductionHoldsInput(); })) {
      left.push_back(i);
      continue;
    }
    for (auto& f : flats) f->finishReduce();
  }
  reducing_ = std::move(left);
  commSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void ShardedModel::settleGradients() {
  finishReductions();
  // NOTE [Streams around collectives]: the gradients' last writes ran on the communication stream.
  if (options_.offloadShards) {
    streams_.synchronize();  // the chunks are in host memory; no copy of a shard still reads it
    for (auto& u : units_) {
      for (auto& f : u.flats) f->landGradients();
    }
  } else if (streams_.active()) {
    const c10::Stream compute = streams_.current();
    streams_.waitFor(compute, streams_.communication());
    for (const auto& u : units_) {
      for (const auto& f : u.flats) streams_.recordTensor(f->shard().grad(), compute);
    }
  }
  int64_t gradBytes = 0;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) {
      const torch::Tensor& g = f->shard().grad();
      if (g.defined()) gradBytes += g.numel() * static_cast<int64_t>(g.element_size());
    }
  }
  peakShardGrads_ = std::max(peakShardGrads_, gradBytes);
}

void ShardedModel::finishBackward(bool settle) {
  deferredReduce_.clear();  // reduced below
  // Reverse unit order, as backward produces them; every rank the same.
  for (size_t i = units_.size(); i-- > 0;) {
    reduce(i);
    free(units_[i]);
  }
  if (settle || !shards_.shared()) {
    settleGradients();
  } else {
    finishReductions(/*holdingInputs=*/true);
  }
  outputEdges_.clear();
  phase_ = Phase::kIdle;
}

std::map<std::string, double> ShardedModel::gradientAbsSums() {
  torch::NoGradGuard noGrad;
  std::vector<std::string> names;
  std::vector<double> sums;
  for (const auto& u : units_) {
    for (const auto& f : u.flats) {
      if (!f->trainable()) continue;
      const torch::Tensor g = f->shard().grad();
      for (size_t m = 0; m < f->members().size(); ++m) {
        names.push_back(f->members()[m].name);
        const auto s = f->localSlice(m);
        sums.push_back(g.defined() && s.length > 0
                           ? g.narrow(0, s.shardOffset, s.length).abs().sum().item<double>()
                           : 0.0);
      }
    }
  }
  torch::Tensor all = torch::tensor(sums, torch::kFloat64);
  if (shardComm_->size() > 1 && all.numel() > 0) {
    torch::Tensor wire = onCommDevice(all);
    shardComm_->allReduce(wire, distributed::ReduceOp::kSum, "gradient sums");
    if (!wire.is_same(all)) all.copy_(wire);
  }
  std::map<std::string, double> out;
  for (size_t i = 0; i < names.size(); ++i) out[names[i]] = all[static_cast<int64_t>(i)].item<double>();
  return out;
}

std::vector<torch::Tensor> ShardedModel::parameterValues(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard noGrad;
  std::vector<MemberOf> where;
  int64_t total = 0;
  for (const auto& p : params) {
    auto it = memberOf_.find(p.unsafeGetTensorImpl());
    TORCH_CHECK(it != memberOf_.end(), "ShardedModel: a tensor of shape ", p.sizes(),
                " is not a parameter of the model");
    where.push_back(it->second);
    total += p.numel();
  }
  // Each rank fills what its shard holds; the sum over the shard group is the value.
  torch::Tensor all = torch::zeros({total}, torch::kFloat64);
  int64_t at = 0;
  for (const auto& w : where) {
    const auto s = w.flat->localSlice(w.member);
    if (s.length > 0) {
      all.narrow(0, at + s.memberOffset, s.length)
          .copy_(w.flat->shard().detach().narrow(0, s.shardOffset, s.length));
    }
    at += w.flat->members()[w.member].param.numel();
  }
  if (shardComm_->size() > 1) {
    torch::Tensor wire = onCommDevice(all);
    shardComm_->allReduce(wire, distributed::ReduceOp::kSum, "parameter values");
    if (!wire.is_same(all)) all.copy_(wire);
  }
  std::vector<torch::Tensor> out;
  at = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    // The shard's dtype: a trainable member's master copy, not its gathered cast.
    const auto dtype = where[i].flat->shard().scalar_type();
    out.push_back(all.narrow(0, at, p.numel()).to(dtype).view(p.sizes()).clone());
    at += p.numel();
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> ShardedModel::fullParameters(bool keep) {
  torch::NoGradGuard noGrad;
  std::map<std::string, torch::Tensor> values;
  for (auto& u : units_) {
    for (auto& f : u.flats) {
      const torch::Tensor full = f->gatherValues(*shardComm_, "state dict " + u.path);
      if (!keep) continue;
      for (size_t m = 0; m < f->members().size(); ++m) {
        const auto& p = f->members()[m].param;
        values[f->members()[m].name] = full.narrow(0, f->offsetOf(m), p.numel())
                                           .view(p.sizes())
                                           .to(f->modelDtype())
                                           .clone()
                                           .set_requires_grad(f->trainable());
      }
    }
  }
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (!keep) return out;
  for (const auto& name : order_) out.emplace_back(name, values.at(name));
  return out;
}

namespace {

// Where a tensor's gradient arrives in the graph: two tensors with one edge get one gradient.
std::optional<std::pair<const void*, uint32_t>> gradientEdge(const at::Tensor& t) {
  if (!t.defined() || !t.requires_grad() || !t.grad_fn()) return std::nullopt;
  return std::make_pair(static_cast<const void*>(t.grad_fn().get()), t.output_nr());
}

}  // namespace

void ShardedModel::beginUnitBackward(size_t i) {
  reduceDeferred();
  gather(units_[i]);
  nextInBackward_[i] = backwardOrder_.next(i);
  if (options_.backwardPrefetch == ShardingOptions::BackwardPrefetch::kPre) prefetch(nextInBackward_[i]);
}

void ShardedModel::endUnitBackward(size_t i) {
  reduceDeferred();
  // kPost: the next unit's gather overlaps this one's reduce-scatter.
  if (options_.backwardPrefetch == ShardingOptions::BackwardPrefetch::kPost) prefetch(nextInBackward_[i]);
  if (reduceDuringBackward_ && visits_[i] == 1) reduce(i);
  free(units_[i]);
}

void ShardedModel::gradientArrived(size_t i) {
  reduceDeferred();
  if (phase_ != Phase::kBackward || !endsOnGradients_[i]) return;
  if (++arrived_[i] < trainableMembers_[i]) return;
  endsOnGradients_[i] = false;
  // This hook runs before the last gradient is added to its member: the reduce-scatter waits for the next
  // hook (or finishBackward); the parameters are not needed any more.
  if (options_.backwardPrefetch == ShardingOptions::BackwardPrefetch::kPost) prefetch(nextInBackward_[i]);
  if (reduceDuringBackward_) deferredReduce_.push_back(i);
  free(units_[i]);
}

void ShardedModel::reduceDeferred() {
  for (size_t i : deferredReduce_) reduce(i);
  deferredReduce_.clear();
}

void ShardedModel::before(torch::nn::Module& module, const at::Tensor& input) {
  auto it = unitOf_.find(&module);
  if (it == unitOf_.end()) return;
  const size_t i = it->second;
  if (phase_ == Phase::kBackward) {  // the recompute of an activation-checkpointed region
    beginUnitBackward(i);
    return;
  }
  gather(units_[i]);
  if (phase_ != Phase::kForward) return;
  ++visits_[i];
  const auto next = forwardOrder_.next(i);
  if (options_.forwardPrefetch) prefetch(next);
  const auto edge = gradientEdge(input);
  // No gradient flows into the input (an embedding lookup): the backward is over once every trainable
  // member has its gradient.
  if (!edge && trainableMembers_[i] > 0) endsOnGradients_[i] = true;
  if (edge) {
    // Once the gradient reaching the unit's input exists, its backward is over.
    auto producer = outputEdges_.find(*edge);
    if (producer != outputEdges_.end()) {
      producer->second.endsFirst->push_back(i);  // ended by the producing unit's hook, before it gathers
    } else {
      input.register_hook([this, i](const at::Tensor& g) {
        endUnitBackward(i);
        return g;
      });
    }
  }
}

void ShardedModel::after(torch::nn::Module& module, const at::Tensor& output) {
  if (phase_ != Phase::kForward) return;  // a recompute in backward: keep it for the backward that follows
  auto it = unitOf_.find(&module);
  if (it == unitOf_.end()) return;
  const size_t i = it->second;
  // Without a graph (the vision tower; checkpointed regions, which gather again in their recompute) no
  // backward needs the unit: free it whatever the strategy.
  const auto edge = gradientEdge(output);
  if (freeAfterForward() || !edge) free(units_[i]);
  if (edge) {
    auto endsFirst = std::make_shared<std::vector<size_t>>();
    outputEdges_[*edge] = {output.grad_fn(), endsFirst};
    output.register_hook([this, i, endsFirst](const at::Tensor& g) {
      for (size_t k : *endsFirst) endUnitBackward(k);
      beginUnitBackward(i);
      return g;
    });
  }
}

}  // namespace fs::fsdp

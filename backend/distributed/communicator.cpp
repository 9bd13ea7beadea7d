#include "backend/distributed/communicator.h"

#include <torch/torch.h>

#include "backend/distributed/shared_shards.h"

namespace fs::distributed {

std::unique_ptr<SharedShards> Communicator::shareShards(uint64_t /*bytes*/, std::string* why) {
  if (why) *why = "the group's collectives do not travel through shared memory (" + transport() + ")";
  return nullptr;
}

void Communicator::fail(std::string_view op, std::string_view what, int64_t seq,
                        const std::string& cause) const {
  std::string msg = std::string(op) + " #" + std::to_string(seq);
  if (!what.empty()) msg += " (" + std::string(what) + ")";
  msg += " failed on rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ": " + cause;
  if (describeFailure_) {
    std::string peers;
    try {
      peers = describeFailure_();
    } catch (const std::exception& e) {
      peers = std::string("peer state unavailable: ") + e.what();
    }
    if (!peers.empty()) msg += "; " + peers;
  }
  throw CollectiveError(msg);
}

void Communicator::checkGatherArgs(const at::Tensor& out, const at::Tensor& in) const {
  TORCH_CHECK(out.is_contiguous(), "all_gather: the output must be contiguous");
  TORCH_CHECK(out.numel() == size() * in.numel(), "all_gather: output has ", out.numel(),
              " elements, expected ", size(), " x ", in.numel());
  TORCH_CHECK(out.scalar_type() == in.scalar_type(), "all_gather: input and output dtypes differ");
}

void Communicator::checkScatterArgs(const at::Tensor& out, const at::Tensor& in) const {
  TORCH_CHECK(out.is_contiguous(), "reduce_scatter: the output must be contiguous");
  TORCH_CHECK(in.numel() == size() * out.numel(), "reduce_scatter: input has ", in.numel(),
              " elements, expected ", size(), " x ", out.numel());
  TORCH_CHECK(out.scalar_type() == in.scalar_type(), "reduce_scatter: input and output dtypes differ");
}

namespace {

class Done final : public PendingCollective {
 public:
  void wait() override {}
};

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backendName() const override { return "solo"; }
  void allReduce(at::Tensor&, ReduceOp, std::string_view what) override {
    CollectiveScope s(tracker_, std::string(what));
  }
  std::unique_ptr<PendingCollective> allReduceAsync(at::Tensor, ReduceOp, std::string what) override {
    CollectiveScope s(tracker_, std::move(what));
    return std::make_unique<Done>();
  }
  void broadcast(at::Tensor&, int root, std::string_view what) override {
    TORCH_CHECK(root == 0, "broadcast: root ", root, " is outside a group of 1");
    CollectiveScope s(tracker_, std::string(what));
  }
  void allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) override {
    CollectiveScope s(tracker_, std::string(what));
    checkGatherArgs(out, in);
    if (!out.is_same(in)) out.view({-1}).copy_(in.reshape({-1}));
  }
  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor out, at::Tensor in,
                                                    std::string what) override {
    allGather(out, in, what);
    return std::make_unique<Done>();
  }
  std::unique_ptr<PendingCollective> reduceScatterAsync(at::Tensor out, at::Tensor in, ReduceOp op,
                                                        std::string what) override {
    reduceScatter(out, in, op, what);
    return std::make_unique<Done>();
  }
  void reduceScatter(at::Tensor& out, const at::Tensor& in, ReduceOp, std::string_view what) override {
    CollectiveScope s(tracker_, std::string(what));
    checkScatterArgs(out, in);
    if (!out.is_same(in)) out.view({-1}).copy_(in.reshape({-1}));
  }
  void barrier(std::string_view what) override { CollectiveScope s(tracker_, std::string(what)); }
  std::shared_ptr<Communicator> split(const std::vector<std::vector<int>>&, const std::string&) override {
    return std::make_shared<SoloCommunicator>();
  }
};

}  // namespace

std::shared_ptr<Communicator> makeSoloCommunicator() {
  return std::make_shared<SoloCommunicator>();
}

std::vector<std::vector<int>> intraNodeGroups(int world, int perNode) {
  TORCH_CHECK(perNode > 0 && world % perNode == 0, "intraNodeGroups: ", world,
              " ranks do not split into nodes of ", perNode);
  std::vector<std::vector<int>> groups(static_cast<size_t>(world / perNode));
  for (int r = 0; r < world; ++r) groups[static_cast<size_t>(r / perNode)].push_back(r);
  return groups;
}

std::vector<std::vector<int>> interNodeGroups(int world, int perNode) {
  TORCH_CHECK(perNode > 0 && world % perNode == 0, "interNodeGroups: ", world,
              " ranks do not split into nodes of ", perNode);
  std::vector<std::vector<int>> groups(static_cast<size_t>(perNode));
  for (int r = 0; r < world; ++r) groups[static_cast<size_t>(r % perNode)].push_back(r);
  return groups;
}

}  // namespace fs::distributed

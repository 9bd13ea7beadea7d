#include "tests/backend/trainer/routing_check.h"

#include <c10/util/Backtrace.h>

#include <sstream>

#include "backend/distributed/shared_shards.h"
#include "tests/backend/trainer/stand_in_device.h"

namespace fs::testing {
namespace {

// The first frame of this thread's stack outside the routing check that has a symbol: who issued the
// collective. "frame #7: fs::trainer::ControlLoop::agree(...) + 0x6c (0x... in ...)" -> the symbol. Functions
// with internal linkage have none in the dynamic symbol table: the first caller that has one is named, with
// how many frames lie between.
std::string caller() {
  std::istringstream frames(c10::get_backtrace(/*frames_to_skip=*/1, /*maximum_number_of_frames=*/32));
  std::string line;
  int unnamed = 0;
  while (std::getline(frames, line)) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string symbol = line.substr(colon + 2);
    symbol = symbol.substr(0, symbol.find(" + 0x"));
    const std::string name = symbol.substr(0, symbol.find('('));
    if (name.find("RoutingCheck") != std::string::npos || name.rfind("fs::testing::", 0) == 0 ||
        name.find("get_backtrace") != std::string::npos) {
      continue;
    }
    if (name.find("<unknown function>") != std::string::npos) {
      ++unnamed;
      continue;
    }
    return unnamed == 0
               ? symbol
               : symbol + " (through " + std::to_string(unnamed) + " frame(s) of internal functions)";
  }
  return "(no symbol: is the test binary linked with ENABLE_EXPORTS?)";
}

}  // namespace

RoutingCheck::RoutingCheck(std::shared_ptr<distributed::Communicator> inner, GroupRole role,
                           c10::Device device)
    : inner_(std::move(inner)),
      role_(role),
      device_(device),
      passed_(std::make_shared<std::atomic<int64_t>>(0)) {
  setTransport(inner_->transport() + (role_ == GroupRole::kHost ? " (routing check: host group)"
                                                                : " (routing check: device group)"));
}

RoutingCheck::RoutingCheck(std::shared_ptr<distributed::Communicator> inner, const RoutingCheck& parent)
    : RoutingCheck(std::move(inner), parent.role_, parent.device_) {
  passed_ = parent.passed_;
}

at::Tensor RoutingCheck::admit(const at::Tensor& t, std::string_view op, std::string_view what) const {
  const bool host = role_ == GroupRole::kHost;
  const bool fits = host ? t.device().is_cpu() : t.device() == device_;
  if (!fits) {
    throw RoutingError("routing: " + std::string(op) + " '" + std::string(what) + "' on the " +
                       (host ? "host" : "device") + " group got a tensor on " + t.device().str() + " (" +
                       (host ? "tensors on the device belong on the device group"
                             : "host tensors belong on the host group") +
                       ", NOTE [Host and device groups]); issued by " + caller());
  }
  return !host && t.device() != c10::Device(c10::kCPU) ? hostViewOf(t) : t;
}

void RoutingCheck::allReduce(at::Tensor& t, distributed::ReduceOp op, std::string_view what) {
  at::Tensor wire = admit(t, "all_reduce", what);
  ++*passed_;
  inner_->allReduce(wire, op, what);
}

std::unique_ptr<distributed::PendingCollective> RoutingCheck::allReduceAsync(at::Tensor t,
                                                                             distributed::ReduceOp op,
                                                                             std::string what) {
  at::Tensor wire = admit(t, "all_reduce", what);
  ++*passed_;
  return inner_->allReduceAsync(wire, op, std::move(what));
}

void RoutingCheck::broadcast(at::Tensor& t, int root, std::string_view what) {
  at::Tensor wire = admit(t, "broadcast", what);
  ++*passed_;
  inner_->broadcast(wire, root, what);
}

void RoutingCheck::allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) {
  at::Tensor wireOut = admit(out, "all_gather", what);
  const at::Tensor wireIn = admit(in, "all_gather", what);
  ++*passed_;
  inner_->allGather(wireOut, wireIn, what);
}

std::unique_ptr<distributed::PendingCollective> RoutingCheck::allGatherAsync(at::Tensor out, at::Tensor in,
                                                                             std::string what) {
  at::Tensor wireOut = admit(out, "all_gather", what);
  at::Tensor wireIn = admit(in, "all_gather", what);
  ++*passed_;
  return inner_->allGatherAsync(wireOut, wireIn, std::move(what));
}

void RoutingCheck::reduceScatter(at::Tensor& out, const at::Tensor& in, distributed::ReduceOp op,
                                 std::string_view what) {
  at::Tensor wireOut = admit(out, "reduce_scatter", what);
  const at::Tensor wireIn = admit(in, "reduce_scatter", what);
  ++*passed_;
  inner_->reduceScatter(wireOut, wireIn, op, what);
}

std::unique_ptr<distributed::PendingCollective> RoutingCheck::reduceScatterAsync(at::Tensor out,
                                                                                 at::Tensor in,
                                                                                 distributed::ReduceOp op,
                                                                                 std::string what) {
  at::Tensor wireOut = admit(out, "reduce_scatter", what);
  at::Tensor wireIn = admit(in, "reduce_scatter", what);
  ++*passed_;
  return inner_->reduceScatterAsync(wireOut, wireIn, op, std::move(what));
}

std::shared_ptr<distributed::Communicator> RoutingCheck::split(const std::vector<std::vector<int>>& groups,
                                                               const std::string& name) {
  return std::make_shared<RoutingCheck>(inner_->split(groups, name), *this);
}

std::unique_ptr<distributed::SharedShards> RoutingCheck::shareShards(uint64_t bytes, std::string* why) {
  if (role_ == GroupRole::kDevice) {
    if (why)
      *why = "the device group stands in for NCCL, whose collectives do not travel through shared memory";
    return nullptr;
  }
  return inner_->shareShards(bytes, why);
}

void checkRouting(distributed::RankGroups& groups, c10::Device device) {
  groups.host = std::make_shared<RoutingCheck>(groups.host, GroupRole::kHost, device);
  groups.device = std::make_shared<RoutingCheck>(groups.device, GroupRole::kDevice, device);
}

}  // namespace fs::testing

// A Communicator for tests that wraps a real one and refuses every
// collective whose tensor lives in the wrong memory for its group (NOTE
// [Host and device groups] in backend/distributed/groups.h): on the host group a
// tensor that is not on the CPU, on the device group one that is not on the
// rank's device. The refusal throws RoutingError naming the collective, its
// group, the tensor's device and the function that issued it (the first
// frame of the backtrace outside this file; the test binary exports its
// symbols for that), before anything is sent; every rank issues the same
// collectives, so every rank refuses the same one.
//
// The device group's tensors are handed to the wrapped communicator as CPU
// tensors over the same memory when they are on the stand-in device
// (stand_in_device.h): a Gloo group over the CPU plays the NCCL group. As
// NCCL, that group offers no node-shared shards.
//
// Thread-safety: as Communicator.
#pragma once

#include <c10/core/Device.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "backend/distributed/communicator.h"
#include "backend/distributed/groups.h"

namespace fs::testing {

class RoutingError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

enum class GroupRole { kHost, kDevice };

class RoutingCheck final : public distributed::Communicator {
 public:
  // `device`: the rank's device, where the device group's tensors must be.
  RoutingCheck(std::shared_ptr<distributed::Communicator> inner, GroupRole role, c10::Device device);
  // A group split from `parent`'s (it counts into the parent's passed()).
  RoutingCheck(std::shared_ptr<distributed::Communicator> inner, const RoutingCheck& parent);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backendName() const override { return inner_->backendName(); }
  void allReduce(at::Tensor& t, distributed::ReduceOp op, std::string_view what) override;
  std::unique_ptr<distributed::PendingCollective> allReduceAsync(at::Tensor t, distributed::ReduceOp op,
                                                                 std::string what) override;
  void broadcast(at::Tensor& t, int root, std::string_view what) override;
  void allGather(at::Tensor& out, const at::Tensor& in, std::string_view what) override;
  std::unique_ptr<distributed::PendingCollective> allGatherAsync(at::Tensor out, at::Tensor in,
                                                                 std::string what) override;
  void reduceScatter(at::Tensor& out, const at::Tensor& in, distributed::ReduceOp op,
                     std::string_view what) override;
  std::unique_ptr<distributed::PendingCollective> reduceScatterAsync(at::Tensor out, at::Tensor in,
                                                                     distributed::ReduceOp op,
                                                                     std::string what) override;
  void barrier(std::string_view what) override { inner_->barrier(what); }
  std::shared_ptr<distributed::Communicator> split(const std::vector<std::vector<int>>& groups,
                                                   const std::string& name) override;
  std::unique_ptr<distributed::SharedShards> shareShards(uint64_t bytes, std::string* why) override;
  void setFailureDescriber(std::function<std::string()> f) override {
    inner_->setFailureDescriber(std::move(f));
  }

  // Collectives this wrapper and the groups split from it let through (every rank counts the same).
  int64_t passed() const { return *passed_; }

 private:
  // Throws RoutingError unless `t` belongs on this group; returns what the wrapped group gets.
  at::Tensor admit(const at::Tensor& t, std::string_view op, std::string_view what) const;

  std::shared_ptr<distributed::Communicator> inner_;
  GroupRole role_;
  c10::Device device_;
  std::shared_ptr<std::atomic<int64_t>> passed_;  // shared with the splits
};

// Wraps the rank's groups: the host group (role kHost) and the device group (kDevice), two wrappers of one
// communicator when the groups are shared (Gloo).
void checkRouting(distributed::RankGroups& groups, c10::Device device);

}  // namespace fs::testing

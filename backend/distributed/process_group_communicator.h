// A Communicator on a c10d process group: Gloo on CPU, NCCL when the engine
// is built with CUDA (FS_WITH_CUDA). Built by rendezvous.h once the store is
// up and every rank has passed the pre-flight check.
//
// Thread-safety: as Communicator.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "backend/distributed/communicator.h"

namespace fs::distributed {

struct GroupOptions {
  std::string backend = "gloo";                                 // gloo | nccl
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // per collective
  // The address Gloo binds to: one the peers can reach (rendezvous.h picks
  // the local address of the route to the master).
  std::string bindAddress = "127.0.0.1";
  // Gloo groups whose members all post the same nodeKey also exchange
  // through shared memory (NOTE [Shared-memory transport] in
  // shm_communicator.h); so do the groups split from them.
  bool sharedMemory = false;
  std::string nodeKey;
  uint64_t sharedMemoryArenaBytes = 64ull << 20;
};

// Joins the group of `size` ranks whose members use the same store (keys
// are prefixed with `prefix`). Blocks until every member has joined or the
// timeout passes; throws CollectiveError naming the problem.
std::shared_ptr<Communicator> makeProcessGroupCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                           const std::string& prefix, int rank, int size,
                                                           const GroupOptions& options);

}  // namespace fs::distributed

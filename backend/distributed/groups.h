// The two groups a rank talks to its peers through: one for host tensors,
// one for tensors on the rank's device.
//
// NOTE [Host and device groups]: NCCL carries device tensors only, and Gloo
// carries CUDA tensors only by copying them through host memory; a step
// exchanges both kinds. So every rank holds two groups of the same ranks,
// and each collective goes to the group of the memory its tensor lives in:
//  - the *host group* (Gloo; inside a node with the shared-memory transport)
//    carries tensors in host memory: whatever decides what the loop does
//    next (the data-ready round, control, the iteration's opening and
//    closing with the non-finite skip, the resume point, validation's batch
//    and loss sums, the checkpoint writers' agreements), the per-rank
//    figures, and every barrier;
//  - the *device group* carries tensors on the rank's device: gradients and
//    parameters. FSDP's all-gathers and reduce-scatters, the small sums FSDP
//    reads from its shards (gradient norm, gradient-flow sums, parameter
//    values, optimizer state, delayed init's hashes: each moved to the
//    compute device first), DDP's bucket all-reduces, and the broadcasts of
//    parameters and buffers (initial weights, a node leader's values).
// With parallel.dist_backend nccl the device group is an NCCL group beside
// the Gloo host group; with gloo one Gloo group is both (`device` and
// `host` are the same communicator: one sequence of collectives, exactly as
// when there was only one group). A value is never copied to suit a group:
// a caller that holds a host value for the device group (or the reverse)
// has picked the wrong group. Splits (hybrid_shard's node and replica groups)
// are taken from the group whose tensors they carry: FSDP's from the device
// group.
// Each group keeps the contract of communicator.h on its own: every rank
// issues the same collectives on it in the same order. The two groups do
// not wait for each other: a device collective may still be in flight
// (NCCL runs it on its own stream) while the host group agrees on
// something, and since every rank issues both in the same program order no
// rank waits on a peer that waits on it.
// tests/backend/trainer/group_routing_test.cpp checks the routing of every
// collective of a run on CPU (a stand-in device for the GPU).
//
// Thread-safety: a plain value; the communicators' own rules apply.
#pragma once

#include <memory>

#include "backend/distributed/communicator.h"

namespace fs::distributed {

struct RankGroups {
  std::shared_ptr<Communicator> host;    // Gloo (solo with one rank)
  std::shared_ptr<Communicator> device;  // NCCL, or the host group itself
  // True when one communicator serves both (Gloo, or one rank).
  bool shared() const { return host == device; }
};

// One rank: the solo communicator for both.
inline RankGroups soloGroups() {
  auto solo = makeSoloCommunicator();
  return {solo, solo};
}

}  // namespace fs::distributed

// Collectives between the ranks of one node through shared memory, beside
// the Gloo group of the same ranks.
//
// NOTE [Shared-memory transport]: Gloo on loopback costs 350-700 us per
// small collective and moves ~0.7 GB/s on this project's 2-core hosts
// (measured with Debian's torch.distributed: all_gather of 1 K floats 704
// us, of 1 M floats 5.6 ms), and its worker threads compete with the
// training threads for the cores. FSDP issues three collectives per unit
// per step, so on CPU nodes that latency, not arithmetic, set the step
// time. Here each rank *publishes* its contribution when it issues a
// collective: a copy into its own arena of the node's segment
// (shm_segment.h) and a descriptor, then a bump of its `published`
// counter. Completing the collective (wait()) waits until every peer has
// published it, then reads their arenas (all-gather and broadcast copy;
// all-reduce and reduce-scatter add in rank order, so every rank computes
// the same bits), and bumps `completed`. No thread is involved: issuing
// never blocks on a peer, which is what lets FSDP's prefetch overlap.
//
// - Completions happen in issue order: waiting for one collective first
//   completes the earlier ones still pending (their tensors are alive, as
//   the interface requires).
// - A rank reuses arena space and descriptor slots once every peer has
//   completed the collective that used them. A rank that must wait for
//   space first completes its own pending collectives, so two ranks never
//   wait on each other.
// - Messages over half an arena go through the Gloo group, as do splits;
//   the choice depends only on the size, so every rank takes the same path.
//   Pending shared-memory collectives are completed first.
// - Waiting spins briefly, then sleeps on the segment's futex. Each sleep
//   checks the deadline (the group's collective timeout) and whether a peer
//   process has died (kill(pid, 0) within one pid namespace); either fails
//   the collective naming the peer, and every later collective fails with
//   the same cause.
// - bfloat16 sums accumulate in float32 and are rounded once, as the Gloo
//   path does (NOTE [bfloat16 over Gloo]).
//
// Thread-safety: as Communicator (one issuing thread); a mutex guards the
// state so a PendingCollective may be waited from another thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "backend/distributed/communicator.h"

namespace fs::distributed {

struct SharedMemoryOptions {
  uint64_t arenaBytes = 64ull << 20;  // per rank; messages over half of it use Gloo
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

// Offers the group a shared-memory transport. Every member posts `nodeKey`
// under `prefix` in the store; when all keys are equal, rank 0 creates a
// segment and the others map it. Returns a communicator that uses the
// segment and delegates to `inner` (the Gloo group of the same ranks) for
// what it does not carry; returns `inner` itself when the members are on
// different nodes or any of them cannot map the segment (every member then
// decides the same, and `*why` says why). Blocks until every member has
// answered (the store's timeout).
std::shared_ptr<Communicator> offerSharedMemory(std::shared_ptr<Communicator> inner, c10d::Store& store,
                                                const std::string& prefix, const std::string& nodeKey,
                                                const SharedMemoryOptions& options, std::string* why);

}  // namespace fs::distributed

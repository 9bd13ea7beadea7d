// The data-ready round: with several ranks, before a step takes its batches
// every rank says whether its data is ready, whether its source failed, and
// which control request it polled; all ranks then take the same decision
// (NOTE [Waiting for data] in trainer.cpp).
//
// One round is one max-all-reduce of a few int64 flags; when a rank's source
// failed, a broadcast of that rank's message follows, so that every rank
// (rank 0 writes the events) fails with the text that names the dataset,
// shard and command instead of a peer's closed connection.
//
// Thread-safety: the rank's training thread; every rank of the group calls
// agreeDataReady at the same point, like any collective.
#pragma once

#include <string>

#include "backend/distributed/communicator.h"
#include "backend/trainer/control_request.h"

namespace fs::trainer {

// This rank's side of a round.
struct DataReadiness {
  bool ready = false;      // the source's next() will not block
  std::string failure;     // non-empty: the source failed (waitReady's message)
  ControlRequest control;  // polled, not yet agreed
};

// What every rank agreed.
struct DataRound {
  bool allReady = false;   // every rank's data is ready
  ControlRequest control;  // any rank's flags
  int failedRank = -1;     // the lowest rank whose source failed; -1: none
  std::string failure;     // that rank's message, on every rank
};

// Longer failure messages travel cut to this many bytes.
inline constexpr size_t kMaxRoundMessage = 16 * 1024;

// `comm`: the host group (NOTE [Host and device groups] in distributed/groups.h).
// REQUIRES: every rank of `comm` calls it at the same point.
// Throws distributed::CollectiveError as the collectives do.
DataRound agreeDataReady(distributed::Communicator& comm, const DataReadiness& mine);

}  // namespace fs::trainer

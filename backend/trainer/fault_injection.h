// NOTE [Fault injection]: the distributed failure paths (a NaN on one rank,
// a rank that raises) must be tested on real processes, and real failures
// do not come on demand. Two environment variables, read once at start,
// make one rank misbehave at one iteration:
//   FS_FAULT_NAN_LOSS=<rank>:<iteration>  the first dataset's loss is NaN
//   FS_FAULT_THROW=<rank>:<iteration>     the iteration throws
// (iteration = micro-steps done before it, over the run), and two more cut
// the rank's checkpoint writes (NOTE [Cutting a write sequence] in
// backend/protocol/io/fault_write_env.h) at its <op>-th file operation
// (1-based, counting the Checkpointer's operations only, over the attempt):
//   FS_FAULT_WRITE_KILL=<rank>:<op>       the process raises SIGKILL there
//   FS_FAULT_WRITE_FAIL=<rank>:<op>       the operation fails with an IOError
// For the loss-spike guard (NOTE [Loss-spike guard] in loss_spike_guard.h), a planted bad batch and
// its comparator:
//   FS_FAULT_SPIKE=<rank>:<iteration>:<factor>[,...]  the first dataset's loss of that iteration on
//       that rank is multiplied by <factor> (> 0), backward included (several: comma-separated): a batch
//       whose loss spikes, exactly where the test wants it (scaled images do not: the gates start at 0, so
//       early on the images do not reach the loss at all)
//   FS_SKIP_BATCHES=<iteration>:<count>  every rank, before the iteration <iteration> takes its
//       batches, takes and drops <count> batches (as the guard skips them after a rollback), so a run
//       configured so from the start is the guard's comparator
// Unset in normal use; a malformed value is an error naming the variable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::trainer {

struct FaultPlan {
  int64_t nanRank = -1, nanIteration = -1;
  int64_t throwRank = -1, throwIteration = -1;
  int64_t writeKillRank = -1, writeKillOp = -1;
  int64_t writeFailRank = -1, writeFailOp = -1;
  struct Spike {
    int64_t rank = -1, iteration = -1;
    double factor = 1;
  };
  std::vector<Spike> spikes;
  int64_t skipIteration = -1, skipCount = 0;
  bool nanLossAt(int64_t rank, int64_t iteration) const {
    return rank == nanRank && iteration == nanIteration;
  }
  // The loss factor FS_FAULT_SPIKE plants there; 1 for none.
  double spikeAt(int64_t rank, int64_t iteration) const {
    for (const Spike& s : spikes) {
      if (s.rank == rank && s.iteration == iteration) return s.factor;
    }
    return 1;
  }
  bool throwAt(int64_t rank, int64_t iteration) const {
    return rank == throwRank && iteration == throwIteration;
  }
};

protocol::StatusOr<FaultPlan> faultPlanFromEnvironment(const std::map<std::string, std::string>& env);

}  // namespace fs::trainer

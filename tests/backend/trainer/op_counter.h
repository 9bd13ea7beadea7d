// OpCounter: counts the ATen ops and autograd backward nodes LibTorch runs
// while it is alive, by name, through RecordFunction's global callbacks
// (at::addGlobalCallback / at::removeCallback). A test helper for
// step_budget_test (issue 27 item 4), not part of the engine.
//
// NOTE [Top-level ops]
// Every dispatched op opens a RecordFunction of scope FUNCTION; ops that an op
// calls internally (aten::linear -> aten::t, aten::addmm) open nested ones on
// the same thread. `all` counts every one; `topLevel` only those opened at
// nesting depth 0 on their thread, i.e. the ops our code (or an autograd
// backward formula) called, not the ops called inside other ops. Autograd's
// backward nodes (MulBackward0, ...) open records of scope BACKWARD_FUNCTION;
// they are counted in `backwardNodes` and do not nest. The engine also wraps
// each node's evaluation in a FUNCTION record named
// "autograd::engine::evaluate_function: <node>"; that is not an op and is not
// counted (it repeats backwardNodes), so the ops a node's formula calls are
// top-level. The depth is per thread, so ops that run on
// intra-op worker threads count as top-level there; tests pin one intra-op
// thread for counts that do not depend on the machine.
//
// Thread-safety: the callbacks may fire on any thread and take one mutex;
// take() may be called from any thread. Ownership: at most one OpCounter may
// exist at a time (the callbacks are plain function pointers over one global
// tally); the constructor throws std::logic_error on a second one. REQUIRES: no
// other code adds or removes RecordFunction callbacks while one is alive.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fs::testing {

// Op name -> how many times it ran.
using OpTally = std::map<std::string, std::int64_t>;

struct OpCounts {
  OpTally topLevel;       // FUNCTION records at depth 0 (NOTE [Top-level ops])
  OpTally all;            // every FUNCTION record
  OpTally backwardNodes;  // BACKWARD_FUNCTION records: autograd nodes run

  static std::int64_t total(const OpTally& tally);
  // The `n` most frequent names with their counts, most frequent first (ties by name).
  static std::vector<std::pair<std::string, std::int64_t>> top(const OpTally& tally, std::size_t n);
};

class OpCounter {
 public:
  OpCounter();
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  // The counts since construction or the previous take(); starts a new interval.
  OpCounts take();

 private:
  at::CallbackHandle handle_;
};

}  // namespace fs::testing

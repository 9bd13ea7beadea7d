// The step budget file (tests/backend/trainer/step_budget.txt): the recorded op
// and allocation counts of one training step, which step_budget_test compares
// its measured counts with (issue 27 item 4).
//
// Format: UTF-8 text, one entry a line: `key value`, separated by blanks.
// Lines that are empty or start with '#' are comments. `libtorch` holds the
// LibTorch version the counts were recorded with (counts differ between
// versions); every other key holds a count, a non-negative integer. Keys are
// [a-z0-9_]+, each at most once. Lines `name KEY COUNT OP` (OP: the rest of
// the line) keep the op names behind KEY's count when it was recorded: not
// limits, but what a failure compares the measured names with to say what grew.
//
// Thread-safety: plain functions over values. Ownership: none kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::testing {

using NamedCounts = std::vector<std::pair<std::string, std::int64_t>>;  // key -> count, in order
using NameCounts = std::map<std::string, std::int64_t>;                 // op name -> count

struct StepBudget {
  std::string libtorch;                     // e.g. "1.13.0"
  NamedCounts counts;                       // in file order
  std::map<std::string, NameCounts> names;  // key -> the op names behind its count (may be empty)
};

// Reads and validates a budget file; errors name the file, the line and the value.
protocol::StatusOr<StepBudget> readStepBudget(const std::filesystem::path& path);
// Writes `header` (each line as a '#' comment), then the entries; through a temporary
// file renamed over `path`, so a failed write leaves the old budget in place.
protocol::Status writeStepBudget(const std::filesystem::path& path, const std::string& header,
                                 const StepBudget& budget);

// How the names behind a count changed against the recorded ones: the grown (and new) names,
// largest growth first (ties by name), and the shrunk (and gone) ones, largest drop first.
struct NameChange {
  std::string name;
  std::int64_t recorded = 0;
  std::int64_t now = 0;
};
struct NameChanges {
  std::vector<NameChange> grew;
  std::vector<NameChange> fell;
};
NameChanges compareNames(const NameCounts& recorded, const NameCounts& now);

enum class BudgetVerdict {
  kWithin,     // count <= budget and not far below it
  kOver,       // count > budget: a regression (or an intended growth to re-record)
  kLowerable,  // count more than slackPercent % below budget: the budget can be lowered
  kNoBudget,   // measured, but the file has no such key
  kStale,      // in the file, but not measured
};
struct CountCheck {
  std::string key;
  std::optional<std::int64_t> count;   // absent: kStale
  std::optional<std::int64_t> budget;  // absent: kNoBudget
  BudgetVerdict verdict = BudgetVerdict::kWithin;
};
// One check per measured key (in `measured` order), then one per stale budget key.
// REQUIRES: 0 <= slackPercent < 100.
std::vector<CountCheck> checkAgainstBudget(const StepBudget& budget, const NamedCounts& measured,
                                           int slackPercent);

}  // namespace fs::testing

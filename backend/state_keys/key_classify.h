// Which source keys of a state dict load into which of our parameters: the
// one classification behind the engine's loading (backend/model/state_dict.h
// copies what it classifies as loaded) and `flamingo-train checkpoint check`
// (backend/inspect/checkpoint_check.h, names and shapes only).
//
// Every source key and every parameter lands in exactly one class: loaded,
// missing, expected-frozen (missing by design: a training checkpoint keeps
// only what training changes), unexpected, mis-shaped, or ignored (duplicate
// aliases, recomputed buffers, a tied head).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fs::state_keys {

struct ShapeMismatch {
  std::string name;  // our parameter name
  std::vector<std::int64_t> expected;
  std::vector<std::int64_t> got;
  bool operator==(const ShapeMismatch&) const = default;
};

struct LoadReport {
  std::vector<std::string> loaded;        // our names, copied from the source
  std::vector<std::string> missing;       // our names the source lacks (left unchanged)
  std::vector<std::string> unexpected;    // source keys we do not know
  std::vector<ShapeMismatch> mismatched;  // same name, other shape: not copied ("wrong base model?")
  std::vector<std::string> ignored;  // source keys known and skipped: duplicate aliases, recomputed buffers
  // Frozen parameters the source lacks, moved out of `missing` by
  // markExpectedFrozen(): a checkpoint keeps only what training changes.
  std::vector<std::string> expectedFrozen;

  bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  // Moves every missing name for which `frozen(name)` holds to expectedFrozen.
  void markExpectedFrozen(const std::function<bool(const std::string&)>& frozen);
  // One short paragraph: the count of each class and up to `max_names` names
  // of each problem class ("..., and 37 more"), mis-shaped with both shapes.
  std::string summary(std::size_t max_names = 5) const;
  bool operator==(const LoadReport&) const = default;
};

// How a source key relates to our parameters.
struct KeyTarget {
  enum class Kind { kParameter, kIgnored };
  Kind kind = Kind::kParameter;
  std::string name;    // our parameter name (kParameter)
  bool alias = false;  // an alternative spelling: loses to the canonical key when both are present
};
// nullopt: the key is unexpected.
using KeyMapper = std::function<std::optional<KeyTarget>(const std::string& source_key)>;

struct NamedShape {
  std::string name;
  std::vector<std::int64_t> shape;
};

struct Classification {
  LoadReport report;
  // What to copy, in the order loadNamedTensors copies it: (source key, our name).
  std::vector<std::pair<std::string, std::string>> copies;
};

// Classifies `source` against `ours` (our parameters, in our order: also the
// scope of "missing") through `map`. Source keys are taken in ascending key
// order whatever order they come in (a std::map's, as the loaders hold them);
// canonical keys are applied before aliases, and an alias whose target is
// already loaded is ignored, as is a second canonical spelling of one name.
Classification classifyKeys(const std::vector<NamedShape>& ours, const std::vector<NamedShape>& source,
                            const KeyMapper& map);

std::string shapeString(const std::vector<std::int64_t>& shape);

}  // namespace fs::state_keys

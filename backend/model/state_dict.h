// Loading named tensors into a model, with one report instead of a wall of
// text: which parameters were loaded, missing, expected-frozen (absent from a
// training checkpoint by design: they come from the base weights), unexpected,
// mis-shaped, or deliberately skipped (duplicate aliases, recomputed buffers).
//
// Thread-safety: plain values and free functions. Loading writes the
// parameters in place under no-grad; the caller must not run the model
// concurrently.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fs::model {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct ShapeMismatch {
  std::string name;  // our parameter name
  std::vector<int64_t> expected;
  std::vector<int64_t> got;
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
  std::string summary(size_t max_names = 5) const;
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

// Copies source tensors into `params` (name -> parameter, in our order)
// through `map`, converting dtype and device; `params` is also the scope of
// "missing". Canonical keys are applied before aliases; an alias whose target
// is already loaded is reported as ignored.
LoadReport loadNamedTensors(const NamedTensors& params, const std::map<std::string, torch::Tensor>& source,
                            const KeyMapper& map);

std::string shapeString(const std::vector<int64_t>& shape);

}  // namespace fs::model

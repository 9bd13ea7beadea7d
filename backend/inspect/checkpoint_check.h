// Whether a checkpoint loads into a model, decided from names and shapes
// only: the checkpoint's model-section keys (its index) against our
// parameters, through the one classification the engine's loader uses
// (backend/state_keys, NOTE [One classification] in its README). Frozen
// parameters the checkpoint lacks are expected-frozen, as on resume.
//
//   auto report = checkCheckpointKeys(ckpt, ours, state_keys::flamingoKeyMapper(layout));
//   if (!report.ok()) ... report.summary()
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"
#include "backend/state_keys/key_classify.h"

namespace fs::inspect {

struct OurParameter {
  std::string name;  // the model's named_parameters() name
  std::vector<std::int64_t> shape;
  bool trainable = false;
};

// The report loadNamedTensors would give for this checkpoint's model section,
// with markExpectedFrozen(not trainable) applied.
state_keys::LoadReport checkCheckpointKeys(const CheckpointIndex& checkpoint,
                                           const std::vector<OurParameter>& ours,
                                           const state_keys::KeyMapper& map);

}  // namespace fs::inspect

// Walking the value tree of a checkpoint: find its sections and flatten nested
// dicts into "a.b.c" -> tensor, the names nn.Module.state_dict() uses.
//
// Understands bare state dicts ({name: tensor}) and training checkpoints such
// as OpenFlamingo's {epoch, model_state_dict, optimizer_state_dict,
// lr_scheduler_state_dict}. Thread-safety: plain functions over const trees.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/tensorfile/py_value.h"

namespace fs::tensorfile {

struct NamedTensor {
  std::string name;  // "lang_encoder.model.layers.0.self_attn.q_proj.weight", "state.0.exp_avg"
  std::shared_ptr<const TensorRef> tensor;
};

struct FlattenOptions {
  // Descend into lists and tuples too (component = index), e.g. for
  // optimizer param_groups; dicts are always descended.
  bool includeSequences = true;
  // Names start with this ("" for none); a "." is added after it.
  std::string prefix;
  // Error (InvalidArgument) beyond this many visited values: a shared subtree
  // referenced from many places must not make the walk explode.
  std::uint64_t maxVisits = 50'000'000;
};

// Every tensor under `root`, in insertion order, named by the path of keys
// (str keys as is, int keys in decimal, other keys as their debug string).
// Objects of unknown classes, sets and scalars are not descended into.
StatusOr<std::vector<NamedTensor>> flattenTensors(const PyValue& root, const FlattenOptions& options = {});

// True for a dict whose keys are all str and whose values are all tensors
// (an empty dict counts).
bool isFlatStateDict(const PyValue& value);

struct CheckpointSections {
  const PyValue* model = nullptr;      // the model's state dict (maybe the root itself)
  const PyValue* optimizer = nullptr;  // optimizer.state_dict(): {state, param_groups}
  const PyValue* scheduler = nullptr;  // lr_scheduler.state_dict()
  std::optional<std::int64_t> epoch;
  std::string modelKey;  // "model_state_dict", "state_dict", ...; "" when the root is the state dict
};

// Recognises {model_state_dict | state_dict | model | module,
// optimizer_state_dict | optimizer, lr_scheduler_state_dict | scheduler |
// lr_scheduler, epoch}; a root that is itself a state dict (nested dicts of
// tensors included) is the model. Pointers point into `root`.
CheckpointSections checkpointSections(const PyValue& root);

// Strips `prefix` (e.g. "module." added by DistributedDataParallel) from every
// name that starts with it.
void stripPrefix(std::vector<NamedTensor>& tensors, const std::string& prefix);

}  // namespace fs::tensorfile

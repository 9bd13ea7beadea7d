// Loading named tensors into a model, with one report instead of a wall of
// text. Which source key loads into which parameter is decided by
// backend/state_keys (classifyKeys: names and shapes only, shared with
// `flamingo-train checkpoint check`); this file copies what it classified
// as loaded.
//
// Thread-safety: plain values and free functions. Loading writes the
// parameters in place under no-grad; the caller must not run the model
// concurrently.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/state_keys/key_classify.h"

namespace fs::model {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

using state_keys::KeyMapper;
using state_keys::KeyTarget;
using state_keys::LoadReport;
using state_keys::ShapeMismatch;
using state_keys::shapeString;

// Copies source tensors into `params` (name -> parameter, in our order)
// through `map`, converting dtype and device; `params` is also the scope of
// "missing". The classification is state_keys::classifyKeys' over the
// tensors' names and shapes; only the tensors it reports loaded are copied.
LoadReport loadNamedTensors(const NamedTensors& params, const std::map<std::string, torch::Tensor>& source,
                            const KeyMapper& map);

}  // namespace fs::model

// Shapes of the public models OpenFlamingo trains with, so a config that
// names one (by Hugging Face id or OpenCLIP name) gets the right dimensions
// without downloading anything, and a config that contradicts them is caught.
// An LM entry is a shortcut for what the model's config.json says (shape and
// family knobs); a local directory's config.json, when there is one, is read
// instead (NOTE [LM resolution] in lm_resolver.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/lm_architecture.h"

namespace fs::protocol {

struct KnownLm {
  std::string id;       // Hugging Face id
  LmConfig shape;       // family and dimensions (path / tokenizer_path = id)
  LmArchitecture arch;  // family knobs from its config.json
};
struct KnownVision {
  std::string name;  // OpenCLIP architecture
  VisionConfig shape;
};

const std::vector<KnownLm>& knownLms();
const std::vector<KnownVision>& knownVisionTowers();

// Matches an exact id, or a local path whose last component equals the id's
// last component (".../mpt-7b" matches "anas-awadalla/mpt-7b").
std::optional<KnownLm> findKnownLm(const std::string& pathOrId);
std::optional<KnownVision> findKnownVision(const std::string& name);

// Copies the shape for lm.path (its config.json when lm.path is a local
// directory with one and it parses, else the catalog's) and for vision.path
// into the config, if known. Returns true when something was known. Paths
// themselves are left as given.
bool applyKnownShapes(ModelConfig* model);

}  // namespace fs::protocol

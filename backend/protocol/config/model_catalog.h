// Shapes of the public models OpenFlamingo trains with, so a config that
// names one (by Hugging Face id or OpenCLIP name) gets the right dimensions
// without downloading anything, and a config that contradicts them is caught.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"

namespace fs::protocol {

struct KnownLm {
  std::string id;  // Hugging Face id
  LmConfig shape;  // family and dimensions (path / tokenizer_path = id)
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

// Copies the catalog's shape for lm.path / vision.path into the config, if known.
// Returns true when something was known. Paths themselves are left as given.
bool applyKnownShapes(ModelConfig* model);

}  // namespace fs::protocol

// NOTE [LM resolution]: where the LM's shape and family knobs come from, in
// one place for the trainer, replay, benchmarks and tests
// (model::LmOptions::fromConfig calls resolveLm; validate.cpp reports the same
// errors before a run starts):
//  1. model.lm.path is a local directory with a config.json: that file is the
//     source of truth for the family, the dimensions and the knobs. model.lm's
//     own family and dimensions must agree with it (an error names the field,
//     the file and the file's field otherwise): the weights in that
//     directory only load into the shape it describes.
//  2. Else a catalog id (model_catalog.h, exact or by last path component):
//     the shape is model.lm's own (a catalog mismatch stays a warning, as it
//     always was), the knobs are the catalog entry's.
//  3. Else model.lm's shape and the family defaults (LmArchitecture{}).
//
// Thread-safety: free functions; resolveLm may read one file.
#pragma once

#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/hf_lm_config.h"
#include "backend/protocol/config/lm_architecture.h"
#include "backend/protocol/status.h"

namespace fs::protocol {

struct ResolvedLm {
  LmConfig shape;  // path and tokenizer_path as in model.lm
  LmArchitecture arch;
  std::string source;  // "<dir>/config.json", "catalog: <id>" or "family defaults"
};

StatusOr<ResolvedLm> resolveLm(const LmConfig& lm);

// One disagreement between model.lm and a config.json.
struct LmMismatch {
  std::string field;    // "model.lm.width"
  std::string message;  // "2048, but /m/config.json has hidden_size 768"
};
// model.lm's family and dimensions against the file's (vocab_size, width, layers, heads,
// ffn_dim, max_positions, tied_head).
std::vector<LmMismatch> lmMismatches(const LmConfig& lm, const HfLmConfig& hf);

}  // namespace fs::protocol

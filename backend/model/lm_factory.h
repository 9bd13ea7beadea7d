// The LM factory: builds one of the families (opt.h, mpt.h, gpt_neox.h,
// llama.h) behind the interface of lm_family.h. Kept apart from the interface so
// that lm_family.h/.cpp depend on no family.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/model/lm_family.h"

namespace fs::model {

// Builds the family named by options.family(), initialised from the current
// torch seed (the same seed gives the same weights on every rank).
// Throws c10::Error naming the field for an unknown family.
std::shared_ptr<CausalLmImpl> makeCausalLm(const LmOptions& options);

// The families makeCausalLm knows.
const std::vector<std::string>& lmFamilies();

}  // namespace fs::model

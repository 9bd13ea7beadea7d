#include "backend/model/lm_factory.h"

#include <torch/torch.h>

#include "backend/model/gpt_neox.h"
#include "backend/model/llama.h"
#include "backend/model/mpt.h"
#include "backend/model/opt.h"

namespace fs::model {

const std::vector<std::string>& lmFamilies() {
  static const std::vector<std::string> families = {"opt", "mpt", "gpt_neox", "llama"};
  return families;
}

std::shared_ptr<CausalLmImpl> makeCausalLm(const LmOptions& options) {
  const auto& f = options.family();
  if (f == "opt") return std::make_shared<OptLmImpl>(options);
  if (f == "mpt") return std::make_shared<MptLmImpl>(options);
  if (f == "gpt_neox") return std::make_shared<GptNeoxLmImpl>(options);
  if (f == "llama") return std::make_shared<LlamaLmImpl>(options);
  TORCH_CHECK(false, "model.lm.family: unknown LM family '", f, "' (known: opt, mpt, gpt_neox, llama)");
}

}  // namespace fs::model

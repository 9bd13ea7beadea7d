// The knobs of a language-model family that the run config has no field for
// (they belong to the checkpoint, not to the run): norm epsilon, rotary
// fraction and base, parallel residual, MPT's QK LayerNorm / MosaicGPT names /
// ALiBi range, OPT's pre- or post-LN and padding id, dropout probabilities.
//
// Where they come from (NOTE [LM resolution] in lm_resolver.h): a local Hugging
// Face directory's config.json, else the catalog entry of a known id
// (model_catalog.cpp), else these defaults, which are the family defaults of
// backend/model (LmOptions). model::LmOptions::fromConfig copies them.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>

namespace fs::protocol {

struct LmArchitecture {
  // Unset = the family's default (LayerNorm 1e-5; LLaMA's RMSNorm 1e-6).
  std::optional<double> norm_eps;
  // gpt_neox: rotary on the first rotary_pct of each head; parallel residual
  // (RedPajama-INCITE: 1.0, false; Pythia: 0.25, true).
  double rotary_pct = 1.0;
  bool parallel_residual = false;
  double rotary_base = 10000.0;  // gpt_neox, llama (rope_theta)
  // mpt: LayerNorm on q and k and MosaicGPT's module names (MPT-1B); ALiBi slope range.
  bool qk_ln = false;
  bool mosaic_gpt_names = false;
  double alibi_bias_max = 8.0;
  // opt: pre-LN (OPT-125m/1.3b/...) or post-LN (OPT-350m); the padding row zeroed at init (-1 = none).
  bool layer_norm_before = true;
  int64_t pad_token_id = 1;
  // Dropout probabilities as the family applies them (LmOptions: residual / hidden,
  // attention weights, embedding output); unset = the family's default.
  std::optional<double> dropout;
  std::optional<double> attention_dropout;
  std::optional<double> embedding_dropout;
  bool operator==(const LmArchitecture&) const = default;
};

}  // namespace fs::protocol

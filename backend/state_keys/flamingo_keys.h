// The Flamingo model's key mappers: how OpenFlamingo, Hugging Face and
// OpenCLIP state-dict keys name our parameters. Torch-free, so the engine's
// loaders (backend/model/flamingo.cpp) and `checkpoint check` map with the
// same functions.
//
//   auto map = flamingoKeyMapper(lmKeyLayout("opt", /*tied_head=*/true));
//   auto c = classifyKeys(ours, source, map);
//
// Thread-safety: plain values; a mapper holds copies of what it needs.
#pragma once

#include <string>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/state_keys/key_classify.h"

namespace fs::state_keys {

// What the mappers need to know of the language model, in its Hugging Face
// names (no "lang_encoder." prefix).
struct LmKeyLayout {
  std::string decoderLayersPath;  // "model.decoder.layers"
  std::string outputHeadPath;     // "lm_head"
  bool tiedHead = false;          // the head is the input embedding: its key is a duplicate
  // Buffers HF checkpoints carry that our model recomputes ("self_attn.rotary_emb.inv_freq").
  std::vector<std::string> recomputedSuffixes;
  bool operator==(const LmKeyLayout&) const = default;
};

// NOTE [Key layout table]: the LibTorch model answers these from its LM
// family (CausalLmImpl::decoderLayersPath() and friends); this table is the
// same answer without building the model, for `checkpoint check`.
// tests/backend/model/key_layout_test.cpp builds every family and compares.
// An unknown family is InvalidArgument naming model.lm.family.
protocol::StatusOr<LmKeyLayout> lmKeyLayout(const std::string& family, bool tied_head);

// A full Flamingo state dict (ours, OpenFlamingo's): an optional "module."
// prefix, the tied head and recomputed buffers ignored, and OpenFlamingo's
// duplicate references (lang_encoder.old_decoder_blocks.<i>.*,
// lang_encoder.gated_cross_attn_layers.<i>.*) as aliases of the layer paths.
KeyMapper flamingoKeyMapper(const LmKeyLayout& lm);

// A Hugging Face LM state dict onto lang_encoder.*: layer i's keys go to
// layer i's decoder_layer. Scope: inLanguageModelScope().
KeyMapper languageModelKeyMapper(const LmKeyLayout& lm);
bool inLanguageModelScope(const std::string& our_name);

// An OpenCLIP vision tower (bare), or a full CLIP checkpoint when `full_clip`
// (keys under "visual."; the text tower is ignored). Scope: inVisionScope().
KeyMapper visionKeyMapper(bool full_clip);
bool inVisionScope(const std::string& our_name);

}  // namespace fs::state_keys

// The token ids the data layout and the label rules depend on.
//
// A real tokenizer supplies them (OpenFlamingo adds `<|endofchunk|>` and
// `<image>` as ids N and N+1, then `<PAD>` if the tokenizer has none); tiny
// and synthetic runs take them from `model.tokens`.
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>

#include "backend/protocol/config/config_types.h"

namespace fs::data {

struct SpecialTokenIds {
  int64_t vocabSize = 0;  // tokenizer length including the added tokens
  int64_t eos = 0;
  int64_t pad = 0;
  int64_t image = 0;       // <image>
  int64_t endofchunk = 0;  // <|endofchunk|>

  bool isSpecial(int64_t id) const { return id == eos || id == pad || id == image || id == endofchunk; }
  bool operator==(const SpecialTokenIds&) const = default;
};

inline SpecialTokenIds specialTokensFromConfig(const protocol::TokensConfig& t) {
  return SpecialTokenIds{t.vocab_size, t.eos_id, t.pad_id, t.image_id, t.endofchunk_id};
}

}  // namespace fs::data

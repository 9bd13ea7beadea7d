// A small byte-level BPE trainer, so generated shards come with a real
// GPT-2-style tokenizer (vocab.json + merges.txt) that the tokenizer library
// loads like any Hugging Face one. It learns merges from the generated text
// until the vocabulary has the requested size; the tiny preset's 128-id
// OPT-style vocabulary (<s> <pad> </s> <unk> = 0..3) is what the demo uses.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data {

struct TrainedBpe {
  std::vector<std::string> vocab;   // id -> token (byte-level form, e.g. "Ġcat")
  std::vector<std::string> merges;  // "a b", in rank order
};

// `specials` take ids 0.. in order; then every byte-level symbol of the
// corpus; then merges (most frequent pair first, ties by the pair's text).
// Errors when the corpus alone needs more symbols than `vocabSize`.
protocol::StatusOr<TrainedBpe> trainByteLevelBpe(const std::vector<std::string>& corpus,
                                                 const std::vector<std::string>& specials, size_t vocabSize);

// Writes vocab.json, merges.txt and special_tokens_map.json (OPT style:
// bos = eos = "</s>", pad "<pad>", unk "<unk>") into `dir`.
protocol::Status writeBpeFiles(const TrainedBpe& bpe, const std::string& dir);

}  // namespace fs::data

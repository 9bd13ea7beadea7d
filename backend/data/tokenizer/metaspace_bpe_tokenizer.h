// LLaMA's tokenizer.json: SentencePiece-style BPE with byte fallback, as
// transformers' LlamaTokenizer saves it. Internal to fs_tokenizer; users call
// loadTokenizer().
//
// Thread-safety: immutable after create() except the word cache (NOTE [BPE
// word cache]); every const method may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/data/tokenizer/bpe_tokenizer.h"

namespace fs::data::detail {

// NOTE [Metaspace BPE]
// What HF tokenizers does with such a file, and so what we do, per text piece
// between added tokens:
// 1. normalizer: Prepend(content) puts `content` before a non-empty piece;
//    Replace(pattern, content) replaces every occurrence (string patterns only).
// 2. pre_tokenizer Metaspace: spaces become `replacement`; the prepend_scheme
//    puts one replacement first unless the piece already starts with it:
//    "always" for every piece, "first" only for the piece that begins the text
//    (transformers 5's LlamaTokenizer: after an added token no "▁"), "never"
//    not at all; split=true cuts the piece before each replacement.
//    Transformers 4 wrote LLaMA files with the normalizer (Prepend "▁",
//    Replace " " -> "▁") and no pre-tokenizer instead: a "▁" before every piece.
// 3. model: each character is a symbol when the vocabulary has it, else (with
//    byte_fallback) its UTF-8 bytes as <0xNN> tokens, else unk_token (runs of
//    unknown characters fused into one with fuse_unk), else it is dropped;
//    then merges by rank (BpeMerges).
// Decoding passes every token, added ones included, through the decoder chain:
// Replace, ByteFallback (a run of <0xNN> is its bytes when they are UTF-8,
// else one U+FFFD per token), Fuse, Strip(content, start, stop) per token,
// Metaspace (replacement -> space, dropped in the first token unless "never").
class MetaspaceBpeTokenizer final : public Tokenizer {
 public:
  // REQUIRES: spec.metaspace is set.
  static protocol::StatusOr<std::unique_ptr<MetaspaceBpeTokenizer>> create(const BpeSpec& spec);
  const std::vector<AddedTokenSpec>& fileAddedTokens() const { return fileAdded_; }

 protected:
  void encodeModel(std::string_view text, bool startsText, std::vector<int64_t>& out) const override;
  void decodeModel(const std::vector<int64_t>& ids, std::string& out) const override;
  std::string decodeIds(const std::vector<int64_t>& ids) const override;
  int64_t modelSize() const override { return static_cast<int64_t>(idToToken_.size()); }
  std::optional<int64_t> modelTokenId(std::string_view token) const override;

 private:
  MetaspaceBpeTokenizer() = default;
  void encodeWord(std::string_view word, std::vector<int64_t>& out) const;
  std::string runDecoders(std::vector<std::string> tokens) const;

  MetaspaceSpec spec_;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> idToToken_;  // "" for holes
  std::array<int32_t, 256> byteIds_{};  // <0xNN>; -1 when missing
  int32_t unkId_ = -1;
  BpeMerges merges_;
  std::vector<AddedTokenSpec> fileAdded_;
  WordCache cache_;
};

}  // namespace fs::data::detail

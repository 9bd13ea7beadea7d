// Byte-level BPE (GPT-2, OPT, GPT-NeoX, MPT, RedPajama): the model and the
// readers of its files. Internal to fs_tokenizer; users call loadTokenizer().
//
// Thread-safety: immutable after create() except the word cache, which is
// sharded behind mutexes and bounded (see NOTE [BPE word cache]).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data::detail {

struct AddedTokenSpec {
  std::string content;
  int64_t id = 0;
};

// LLaMA's tokenizer.json (transformers' LlamaTokenizer, SentencePiece-style BPE):
// the initial symbols are characters, one missing from the vocabulary falls
// back to its bytes as <0xNN> tokens, and spaces are written as a meta
// character (the normalizer's Prepend/Replace, or the Metaspace pre-tokenizer).
// NOTE [Metaspace BPE] in metaspace_bpe_tokenizer.h says what each part does.
struct MetaspaceSpec {
  enum class Prepend { kAlways, kFirst, kNever };  // Metaspace.prepend_scheme
  struct Normalizer {                              // applied in order to each text piece
    bool prepend = false;  // Prepend(content) when true, else Replace(pattern, content)
    std::string pattern, content;
  };
  struct PreTokenizer {  // Metaspace
    std::string replacement;
    Prepend prepend = Prepend::kAlways;
    bool split = true;
  };
  struct Decoder {
    enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind = Kind::kFuse;
    std::string pattern,
        content;              // Replace: pattern -> content; Strip: content; Metaspace: content = replacement
    int start = 0, stop = 0;  // Strip
    Prepend prepend = Prepend::kAlways;  // Metaspace
  };
  bool byteFallback = false, fuseUnk = false;
  std::optional<std::string> unkToken;
  std::vector<Normalizer> normalizers;
  std::optional<PreTokenizer> preTokenizer;
  std::optional<std::vector<Decoder>> decoders;  // nullopt: no decoder (tokens joined by " ", as HF)
};

// What the files say, before validation. Byte-level tokens are in GPT-2's byte-to-unicode form ("Ġthe").
struct BpeSpec {
  std::string vocabSource;  // file names for messages
  std::string mergesSource;
  std::vector<std::pair<std::string, int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<std::string> mergeWhere;                      // "line 7" / "model.merges[6]", per merge
  bool addPrefixSpace = false;
  bool nfc = false;                        // tokenizer.json normalizer NFC (GPT-NeoX, MPT)
  std::vector<AddedTokenSpec> added;       // tokenizer.json added_tokens
  std::optional<MetaspaceSpec> metaspace;  // set: LLaMA-style BPE, not byte-level
  // tokenizer.json's post_processor TemplateProcessing: the special tokens its
  // `single` template puts before the text (empty: none). nullopt without a template.
  std::optional<std::vector<std::string>> templatePrefix;
};

// GPT-2 style vocab.json + merges.txt (the first merges line may be "#version: ...").
protocol::StatusOr<BpeSpec> readVocabAndMerges(const std::string& vocabPath, const std::string& mergesPath);
// A Hugging Face tokenizer.json whose model is byte-level BPE; anything else is rejected by name.
protocol::StatusOr<BpeSpec> readTokenizerJson(const std::string& path);

// BPE merges by token id, applied lowest rank first, leftmost among equal
// ranks (HF tokenizers' Word::merge_all); O(n log n) in the word's length.
class BpeMerges {
 public:
  // Every merge's parts and result must be in `vocab`; a repeated pair takes its
  // later rank, as GPT-2's dict(zip(...)) and HF tokenizers do.
  protocol::Status build(const BpeSpec& spec, const std::unordered_map<std::string, int32_t>& vocab);
  // Merges `symbols` (token ids) in place.
  void apply(std::vector<int32_t>& symbols) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  std::unordered_map<uint64_t, Merge> merges_;
};

// GPT-2's reversible byte <-> printable code point table, as UTF-8 strings.
const std::array<std::string, 256>& byteToUnicode();

// NOTE [BPE word cache]
// Captions repeat words, so merged words are cached: 32 shards, each a hash
// map behind its own mutex, cleared when it reaches its bound (no LRU
// bookkeeping on the hot path). Only words up to kMaxCachedWord bytes enter.
class WordCache {
 public:
  static constexpr size_t kShards = 32, kPerShard = 4096, kMaxCachedWord = 64;
  bool lookup(std::string_view word, std::vector<int64_t>& out) const;  // appends on a hit
  void insert(std::string_view word, const int64_t* ids, size_t n) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map;
  };
  mutable std::array<Shard, kShards> shards_;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Validates the spec: every merge's parts and result must be in the vocab, every byte must have a token.
  static protocol::StatusOr<std::unique_ptr<BpeTokenizer>> create(const BpeSpec& spec);
  const std::vector<AddedTokenSpec>& fileAddedTokens() const { return fileAdded_; }

 protected:
  void encodeModel(std::string_view text, bool startsText, std::vector<int64_t>& out) const override;
  void decodeModel(const std::vector<int64_t>& ids, std::string& out) const override;
  int64_t modelSize() const override { return static_cast<int64_t>(idToBytes_.size()); }
  std::optional<int64_t> modelTokenId(std::string_view token) const override;

 private:
  BpeTokenizer() = default;
  void encodeWord(std::string_view word, std::vector<int64_t>& out) const;
  void mergeWord(std::string_view word, std::vector<int64_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;  // byte-to-unicode form -> id
  std::vector<std::string> idToBytes_;              // id -> raw bytes ("" for holes)
  std::array<int32_t, 256> byteIds_{};
  BpeMerges merges_;
  bool addPrefixSpace_ = false;
  bool nfc_ = false;
  std::vector<AddedTokenSpec> fileAdded_;
  WordCache cache_;
};

}  // namespace fs::data::detail

// Tokenizers for OpenFlamingo training: byte-level BPE (OPT, GPT-NeoX, MPT,
// RedPajama; GPT-2 files), LLaMA's tokenizer.json (BPE with byte fallback) and
// SentencePiece (LLaMA's tokenizer.model), with OpenFlamingo's
// added tokens. See README.md in this folder for the file formats accepted.
//
// Thread-safety: a loaded Tokenizer is immutable apart from an internal,
// bounded, mutex-sharded cache; every const method may be called from many
// threads at once. Ownership: loadTokenizer returns the only owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/data/special_tokens.h"
#include "backend/protocol/status.h"

namespace fs::data {

namespace detail {
class TokenizerSetup;  // the loader; fills the special tokens (tokenizer_load.cpp)
}

// Literal tokens matched in the text before the model sees it (HF "added
// tokens"): leftmost match wins, the longest among those at one position.
class AddedTokens {
 public:
  // A content already present keeps its first id. Empty content is ignored.
  void add(const std::string& content, int64_t id);
  std::optional<int64_t> find(std::string_view content) const;
  const std::string* content(int64_t id) const;  // nullptr when `id` is not added
  int64_t maxId() const { return maxId_; }       // -1 when empty
  size_t count() const { return tokens_.size(); }

  // Splits `text` into pieces: onText(string_view) for the (non-empty) text
  // between matches, onToken(id) for each match, in order.
  template <class OnText, class OnToken>
  void split(std::string_view text, OnText&& onText, OnToken&& onToken) const;

 private:
  struct Entry {
    std::string content;
    int64_t id;
  };
  // Index of the leftmost (then longest) match at or after `from`, or -1;
  // `next` caches each token's next occurrence (kStale: not searched yet).
  static constexpr size_t kStale = std::string_view::npos - 1;
  int nextMatch(std::string_view text, size_t from, std::vector<size_t>& next) const;

  std::vector<Entry> tokens_;
  std::unordered_map<std::string, int64_t> byContent_;
  std::unordered_map<int64_t, std::string> byId_;
  int64_t maxId_ = -1;
};

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // Token ids of `text`: BOS first when the family prepends one, then added
  // tokens matched literally (never split) and the model's ids for the text
  // between them. Any bytes are accepted, invalid UTF-8 included.
  std::vector<int64_t> encode(std::string_view text) const;
  // The text of `ids`; added/special tokens render as their text (like HF's
  // decode without skip_special_tokens). Ids out of range are skipped.
  std::string decode(const std::vector<int64_t>& ids) const;

  int64_t size() const;  // len(tokenizer), added tokens included
  // Id of a token written as in the vocabulary (byte-level form, e.g. "Ġthe",
  // or a SentencePiece piece, e.g. "▁the") or of an added token.
  std::optional<int64_t> tokenId(std::string_view token) const;

  const std::string& eosToken() const { return eosToken_; }
  int64_t eosId() const { return eosId_; }
  int64_t padId() const { return padId_; }
  int64_t imageId() const { return imageId_; }
  int64_t endofchunkId() const { return endofchunkId_; }
  std::optional<int64_t> bosId() const { return bosId_; }  // set only when encode prepends it
  SpecialTokenIds specialTokenIds() const { return {size(), eosId_, padId_, imageId_, endofchunkId_}; }

 protected:
  Tokenizer() = default;
  // The model part, for text holding no added token: appends its ids to `out`.
  // `startsText`: the piece begins the text passed to encode() (no added token before it).
  virtual void encodeModel(std::string_view text, bool startsText, std::vector<int64_t>& out) const = 0;
  // Appends the text of a run of model ids (each in [0, modelSize())).
  virtual void decodeModel(const std::vector<int64_t>& ids, std::string& out) const = 0;
  // decode(): by default added tokens render as their text and runs of model ids
  // through decodeModel; a model whose decoder sees every token (HF's decoder
  // chain over added tokens too) overrides this.
  virtual std::string decodeIds(const std::vector<int64_t>& ids) const;
  const std::string* addedContent(int64_t id) const { return added_.content(id); }
  virtual int64_t modelSize() const = 0;
  virtual std::optional<int64_t> modelTokenId(std::string_view token) const = 0;

 private:
  friend class detail::TokenizerSetup;
  AddedTokens added_;
  std::string eosToken_;
  int64_t eosId_ = 0, padId_ = 0, imageId_ = 0, endofchunkId_ = 0;
  std::optional<int64_t> bosId_;
};

// Loads a tokenizer. `path`: a directory holding tokenizer.json (byte-level or
// LLaMA's layout), or vocab.json
// + merges.txt (or OpenAI's encoder.json + vocab.bpe), or tokenizer.model
// (SentencePiece), or one of those files directly. `family`: opt | gpt_neox |
// mpt | llama; it gives BOS and the special tokens the files do not declare
// (special_tokens_map.json, tokenizer_config.json and added_tokens.json beside
// the files are read when present). Then OpenFlamingo's additions:
// `<|endofchunk|>` and `<image>` as ids N, N+1 (one already present is kept),
// then `<PAD>` as the pad token only if there is no pad token.
// Errors name the file and what is wrong.
protocol::StatusOr<std::unique_ptr<Tokenizer>> loadTokenizer(const std::string& path,
                                                             const std::string& family);

// ---- implementation of the template above

template <class OnText, class OnToken>
void AddedTokens::split(std::string_view text, OnText&& onText, OnToken&& onToken) const {
  size_t start = 0;
  if (!tokens_.empty()) {
    std::vector<size_t> next(tokens_.size(), kStale);
    for (int i; (i = nextMatch(text, start, next)) >= 0;) {
      if (next[i] > start) onText(text.substr(start, next[i] - start));
      onToken(tokens_[i].id);
      start = next[i] + tokens_[i].content.size();
    }
  }
  if (start < text.size()) onText(text.substr(start));
}

}  // namespace fs::data

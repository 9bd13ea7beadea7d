// GPT-2's pre-tokenizer: splits text into the "words" byte-level BPE merges
// within, with GPT-2's regex run by PCRE2 (UTF + UCP, JIT when available).
//
// Thread-safety: one compiled pattern per process, shared read-only; the
// PCRE2 match data is per thread. Internal to fs_tokenizer.
#pragma once

#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::data::detail {

// NOTE [GPT-2 regex whitespace]
// `\s` follows Unicode White_Space as HF tokenizers (Oniguruma) and Python's
// `regex` do: PCRE2's UCP `\s` is Z + \t\n\v\f\r, so U+0085 is added by hand.
// (JavaScript's `\s` differs on U+0085 and U+FEFF; the node oracle test avoids
// both.) Invalid UTF-8 never matches the pattern: each run of bytes between
// matches becomes one word of its own, so any bytes encode and round-trip.
class Gpt2PreTokenizer {
 public:
  // The process-wide instance; check status() before use.
  static const Gpt2PreTokenizer& instance();
  const protocol::Status& status() const { return status_; }

  // Appends the words of `text` (views into it, in order, covering it all).
  void split(std::string_view text, std::vector<std::string_view>& words) const;

  ~Gpt2PreTokenizer();
  Gpt2PreTokenizer(const Gpt2PreTokenizer&) = delete;
  Gpt2PreTokenizer& operator=(const Gpt2PreTokenizer&) = delete;

 private:
  Gpt2PreTokenizer();
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so users need no PCRE2 headers
  protocol::Status status_;
};

}  // namespace fs::data::detail

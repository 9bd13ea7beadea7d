#include "backend/data/tokenizer/gpt2_pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <string>

namespace fs::data::detail {
namespace {

// GPT-2's pattern with `\s` widened to White_Space (see NOTE [GPT-2 regex whitespace]).
constexpr char kPattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\x{85}\p{L}\p{N}]+|[\s\x{85}]+(?![^\s\x{85}])|[\s\x{85}]+)";

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// One match data per thread, usable with any pattern without capture groups.
pcre2_match_data* threadMatchData() {
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));
  return data.get();
}

}  // namespace

const Gpt2PreTokenizer& Gpt2PreTokenizer::instance() {
  static const Gpt2PreTokenizer pre;
  return pre;
}

Gpt2PreTokenizer::Gpt2PreTokenizer() {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // MATCH_INVALID_UTF: invalid UTF-8 is skipped by the matcher instead of failing the whole call.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    status_ = protocol::Status::unsupported(
        "GPT-2 pre-tokenizer regex does not compile with this PCRE2 (needs UTF and "
        "Unicode properties): " +
        std::string(reinterpret_cast<char*>(message)));
    return;
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: without JIT the interpreter runs
  code_ = code;
}

Gpt2PreTokenizer::~Gpt2PreTokenizer() {
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Gpt2PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* match = threadMatchData();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, 0, match, nullptr);
    // The JIT's small default stack can run out on pathological input: the interpreter has no such limit.
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
      rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_JIT, match, nullptr);
    size_t begin = text.size(), end = text.size();
    if (rc > 0) {
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      begin = ovector[0];
      end = ovector[1];
    }
    if (begin > pos)
      words.push_back(text.substr(pos, begin - pos));  // bytes no alternative matches (invalid UTF-8)
    if (end > begin) words.push_back(text.substr(begin, end - begin));
    if (end <= pos) break;  // no progress possible (cannot happen: the pattern never matches empty)
    pos = end;
  }
}

}  // namespace fs::data::detail

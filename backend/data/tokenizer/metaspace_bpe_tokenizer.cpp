#include "backend/data/tokenizer/metaspace_bpe_tokenizer.h"

#include <cstdio>

namespace fs::data::detail {
namespace {

using protocol::Status;

constexpr int64_t kMaxVocabId = int64_t{1} << 24;  // as bpe_tokenizer.cpp: bounds memory on bad files

// Length of the UTF-8 character at `s[i]`; 1 for a byte that does not start a valid one.
size_t charLength(std::string_view s, size_t i) {
  const auto b = uint8_t(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((uint8_t(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = charLength(s, i);
    if (n == 1 && uint8_t(s[i]) >= 0x80) return false;
    i += n;
  }
  return true;
}

void replaceAll(std::string& s, const std::string& pattern, const std::string& content) {
  if (pattern.empty()) return;
  std::string out;
  size_t from = 0;
  for (size_t at; (at = s.find(pattern, from)) != std::string::npos; from = at + pattern.size())
    out.append(s, from, at - from).append(content);
  if (from == 0) return;
  out.append(s, from, std::string::npos);
  s = std::move(out);
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// "<0xNN>" -> NN, as HF's ByteFallback decoder reads it; -1 otherwise.
int byteToken(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  int value = 0;
  for (int k = 3; k < 5; ++k) {
    char c = token[k];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

}  // namespace

protocol::StatusOr<std::unique_ptr<MetaspaceBpeTokenizer>> MetaspaceBpeTokenizer::create(
    const BpeSpec& spec) {
  std::unique_ptr<MetaspaceBpeTokenizer> t(new MetaspaceBpeTokenizer());
  t->spec_ = *spec.metaspace;
  std::vector<bool> used;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id >= kMaxVocabId)
      return Status::corruption(spec.vocabSource + ": token \"" + token + "\" has id " + std::to_string(id) +
                                ", outside [0, " + std::to_string(kMaxVocabId) + ")");
    if (size_t(id) >= used.size()) used.resize(id + 1), t->idToToken_.resize(id + 1);
    if (used[id])
      return Status::corruption(spec.vocabSource + ": id " + std::to_string(id) +
                                " is given to two tokens (\"" + token + "\" is one)");
    used[id] = true;
    t->vocab_.emplace(token, int32_t(id));
    t->idToToken_[id] = token;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = t->vocab_.find(name);
    t->byteIds_[b] = it == t->vocab_.end() ? -1 : it->second;
  }
  if (const auto& unk = t->spec_.unkToken) {
    auto it = t->vocab_.find(*unk);
    if (it == t->vocab_.end())
      return Status::corruption(spec.vocabSource + ": model.unk_token \"" + *unk +
                                "\" is not in the vocabulary");
    t->unkId_ = it->second;
  }
  if (Status s = t->merges_.build(spec, t->vocab_); !s.isOk()) return s;
  t->fileAdded_ = spec.added;
  return t;
}

void MetaspaceBpeTokenizer::encodeModel(std::string_view text, bool startsText,
                                        std::vector<int64_t>& out) const {
  std::string piece(text);
  for (const auto& n : spec_.normalizers) {
    if (n.prepend) {
      if (!piece.empty()) piece.insert(0, n.content);
    } else {
      replaceAll(piece, n.pattern, n.content);
    }
  }
  if (!spec_.preTokenizer) {
    encodeWord(piece, out);
    return;
  }
  const auto& pre = *spec_.preTokenizer;
  replaceAll(piece, " ", pre.replacement);
  bool prepend = pre.prepend == MetaspaceSpec::Prepend::kAlways ||
                 (pre.prepend == MetaspaceSpec::Prepend::kFirst && startsText);
  if (prepend && !startsWith(piece, pre.replacement)) piece.insert(0, pre.replacement);
  if (!pre.split) {
    encodeWord(piece, out);
    return;
  }
  // Cut before each replacement (HF's MergedWithNext): "▁a▁▁b" -> "▁a", "▁", "▁b".
  std::string_view rest = piece;
  while (!rest.empty()) {
    size_t cut = rest.find(pre.replacement, startsWith(rest, pre.replacement) ? pre.replacement.size() : 0);
    encodeWord(rest.substr(0, cut), out);
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut);
  }
}

void MetaspaceBpeTokenizer::encodeWord(std::string_view word, std::vector<int64_t>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= WordCache::kMaxCachedWord;
  if (cacheable && cache_.lookup(word, out)) return;
  thread_local std::vector<int32_t> symbols;
  symbols.clear();
  bool pendingUnk = false;  // HF adds a pending unk before the next known character
  std::string key;
  for (size_t i = 0; i < word.size();) {
    size_t n = charLength(word, i);
    key.assign(word.substr(i, n));
    i += n;
    if (auto it = vocab_.find(key); it != vocab_.end()) {
      if (pendingUnk) symbols.push_back(unkId_), pendingUnk = false;
      symbols.push_back(it->second);
      continue;
    }
    if (spec_.byteFallback) {
      bool all = true;
      for (char c : key) all = all && byteIds_[uint8_t(c)] >= 0;
      if (all) {  // as HF: the bytes go in without first adding a pending unk
        for (char c : key) symbols.push_back(byteIds_[uint8_t(c)]);
        continue;
      }
    }
    if (unkId_ >= 0) {
      if (pendingUnk && !spec_.fuseUnk) symbols.push_back(unkId_);
      pendingUnk = true;
    }
  }
  if (pendingUnk) symbols.push_back(unkId_);
  merges_.apply(symbols);
  size_t before = out.size();
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) cache_.insert(word, out.data() + before, out.size() - before);
}

void MetaspaceBpeTokenizer::decodeModel(const std::vector<int64_t>& ids, std::string& out) const {
  out += decodeIds(ids);  // not reached: decodeIds below handles every id
}

std::string MetaspaceBpeTokenizer::decodeIds(const std::vector<int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (const std::string* added = addedContent(id))
      tokens.push_back(*added);
    else if (id >= 0 && id < modelSize() && !idToToken_[id].empty())
      tokens.push_back(idToToken_[id]);
  }
  return runDecoders(std::move(tokens));
}

std::string MetaspaceBpeTokenizer::runDecoders(std::vector<std::string> tokens) const {
  using Kind = MetaspaceSpec::Decoder::Kind;
  if (!spec_.decoders) {  // HF without a decoder: the tokens joined by spaces
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const auto& d : *spec_.decoders) {
    switch (d.kind) {
      case Kind::kReplace:
        for (auto& t : tokens) replaceAll(t, d.pattern, d.content);
        break;
      case Kind::kByteFallback: {
        std::vector<std::string> next;
        std::string bytes;
        size_t count = 0;
        auto flush = [&] {
          if (count == 0) return;
          if (validUtf8(bytes)) {
            next.push_back(bytes);
          } else {
            for (size_t k = 0; k < count; ++k) next.push_back("\xEF\xBF\xBD");  // U+FFFD
          }
          bytes.clear();
          count = 0;
        };
        for (auto& t : tokens) {
          if (int b = byteToken(t); b >= 0) {
            bytes += char(b);
            ++count;
          } else {
            flush();
            next.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(next);
        break;
      }
      case Kind::kFuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Kind::kStrip:
        for (auto& t : tokens) {
          for (int k = 0; k < d.start && startsWith(t, d.content); ++k) t.erase(0, d.content.size());
          for (int k = 0; k < d.stop && t.size() >= d.content.size() &&
                          t.compare(t.size() - d.content.size(), d.content.size(), d.content) == 0;
               ++k)
            t.resize(t.size() - d.content.size());
        }
        break;
      case Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i)
          replaceAll(tokens[i], d.content, i == 0 && d.prepend != MetaspaceSpec::Prepend::kNever ? "" : " ");
        break;
    }
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::optional<int64_t> MetaspaceBpeTokenizer::modelTokenId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

}  // namespace fs::data::detail

#include "backend/data/tokenizer/bpe_tokenizer.h"

#include <cstdio>
#include <queue>

#include "backend/data/tokenizer/gpt2_pretokenizer.h"
#include "backend/data/tokenizer/nfc.h"

namespace fs::data::detail {
namespace {

using protocol::Status;

constexpr int64_t kMaxId = int64_t{1} << 24;  // far above any real vocabulary; bounds memory on bad files

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else {  // the table only needs code points below 0x800
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// Raw bytes of a vocabulary token written in byte-to-unicode form; a token that
// is not in that form (some added tokens are) decodes to its own text.
std::string tokenBytes(const std::string& token,
                       const std::unordered_map<std::string, uint8_t>& unicodeToByte) {
  std::string bytes;
  for (size_t i = 0; i < token.size();) {
    size_t len = (uint8_t(token[i]) < 0x80) ? 1 : (uint8_t(token[i]) >> 5) == 6 ? 2 : 0;
    auto it = len && i + len <= token.size() ? unicodeToByte.find(token.substr(i, len)) : unicodeToByte.end();
    if (it == unicodeToByte.end()) return token;
    bytes += char(it->second);
    i += len;
  }
  return bytes;
}

}  // namespace

const std::array<std::string, 256>& byteToUnicode() {
  // GPT-2: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in byte order.
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = utf8(printable ? b : next++);
    }
    return t;
  }();
  return table;
}

bool WordCache::lookup(std::string_view word, std::vector<int64_t>& out) const {
  size_t h = Hash{}(word);
  Shard& shard = shards_[(h >> 24) % kShards];
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.map.find(word);
  if (it == shard.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, const int64_t* ids, size_t n) const {
  std::vector<int32_t> value(ids, ids + n);
  size_t h = Hash{}(word);
  Shard& shard = shards_[(h >> 24) % kShards];
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= kPerShard) shard.map.clear();
  shard.map.emplace(std::string(word), std::move(value));
}

protocol::StatusOr<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const BpeSpec& spec) {
  const Status& pre = Gpt2PreTokenizer::instance().status();
  if (!pre.isOk()) return pre;
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer());
  std::unordered_map<std::string, uint8_t> unicodeToByte;
  for (int b = 0; b < 256; ++b) unicodeToByte.emplace(byteToUnicode()[b], uint8_t(b));

  std::vector<bool> used;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id >= kMaxId)
      return Status::corruption(spec.vocabSource + ": token \"" + token + "\" has id " + std::to_string(id) +
                                ", outside [0, " + std::to_string(kMaxId) + ")");
    if (size_t(id) >= used.size()) used.resize(id + 1), t->idToBytes_.resize(id + 1);
    if (used[id])
      return Status::corruption(spec.vocabSource + ": id " + std::to_string(id) +
                                " is given to two tokens (\"" + token + "\" is one)");
    used[id] = true;
    t->vocab_.emplace(token, int32_t(id));
    t->idToBytes_[id] = tokenBytes(token, unicodeToByte);
  }
  // A vocabulary without some byte tokens (small trained ones, e.g. the
  // demo's) is usable when it has "<unk>": those bytes encode as <unk>, as
  // HF's BPE does with an unk_token.
  const auto unk = t->vocab_.find("<unk>");
  for (int b = 0; b < 256; ++b) {
    auto it = t->vocab_.find(byteToUnicode()[b]);
    if (it == t->vocab_.end() && unk == t->vocab_.end()) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return Status::corruption(spec.vocabSource + ": no token for byte " + hex + " (\"" +
                                byteToUnicode()[b] +
                                "\") and no <unk>; byte-level BPE needs all 256 byte tokens");
    }
    t->byteIds_[b] = it != t->vocab_.end() ? it->second : unk->second;
  }
  if (Status s = t->merges_.build(spec, t->vocab_); !s.isOk()) return s;
  t->addPrefixSpace_ = spec.addPrefixSpace;
  t->nfc_ = spec.nfc;
  t->fileAdded_ = spec.added;
  return t;
}

void BpeTokenizer::encodeModel(std::string_view text, bool /*startsText*/, std::vector<int64_t>& out) const {
  std::string normalized;  // HF: the normalizer runs on each piece before the pre-tokenizer
  if (nfc_) {
    normalized = toNfc(text);
    text = normalized;
  }
  std::string prefixed;
  if (addPrefixSpace_ && !text.empty() && text[0] != ' ') {  // HF ByteLevel(add_prefix_space), per segment
    prefixed.reserve(text.size() + 1);
    prefixed.append(" ").append(text);
    text = prefixed;
  }
  thread_local std::vector<std::string_view> words;  // reused: no allocation per call in steady state
  words.clear();
  Gpt2PreTokenizer::instance().split(text, words);
  for (std::string_view w : words) encodeWord(w, out);
}

void BpeTokenizer::encodeWord(std::string_view word, std::vector<int64_t>& out) const {
  if (word.size() == 1) {
    out.push_back(byteIds_[uint8_t(word[0])]);
    return;
  }
  const bool cacheable = word.size() <= WordCache::kMaxCachedWord;
  if (cacheable && cache_.lookup(word, out)) return;
  size_t before = out.size();
  mergeWord(word, out);
  if (cacheable) cache_.insert(word, out.data() + before, out.size() - before);
}

void BpeTokenizer::mergeWord(std::string_view word, std::vector<int64_t>& out) const {
  thread_local std::vector<int32_t> symbols;
  symbols.clear();
  for (char c : word) symbols.push_back(byteIds_[uint8_t(c)]);
  merges_.apply(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

Status BpeMerges::build(const BpeSpec& spec, const std::unordered_map<std::string, int32_t>& vocab) {
  auto idOf = [&](const std::string& token, size_t i, int32_t& id) -> Status {
    auto it = vocab.find(token);
    if (it == vocab.end())
      return Status::corruption(spec.mergesSource + " " + spec.mergeWhere[i] + " (\"" + spec.merges[i].first +
                                " " + spec.merges[i].second + "\"): token \"" + token + "\" is not in " +
                                spec.vocabSource);
    id = it->second;
    return Status::ok();
  };
  merges_.reserve(spec.merges.size());
  for (size_t i = 0; i < spec.merges.size(); ++i) {
    const auto& [a, b] = spec.merges[i];
    int32_t ida = 0, idb = 0, result = 0;
    for (auto s : {idOf(a, i, ida), idOf(b, i, idb), idOf(a + b, i, result)})
      if (!s.isOk()) return s;
    merges_.insert_or_assign(pairKey(ida, idb), Merge{int32_t(i), result});
  }
  return Status::ok();
}

// For merges learned in order this equals GPT-2's merge-all-occurrences loop;
// a long word of one repeated symbol stays cheap.
void BpeMerges::apply(std::vector<int32_t>& symbols) const {
  struct Symbol {
    int32_t id, prev, next;
  };
  struct Candidate {
    int32_t rank, pos, left, right, result;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int32_t n = int32_t(symbols.size());
  if (n < 2) return;
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i) sym[i] = {symbols[i], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t pos) {
    int32_t next = sym[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pairKey(sym[pos].id, sym[next].id));
    if (it != merges_.end()) heap.push({it->second.rank, pos, sym[pos].id, sym[next].id, it->second.result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    Symbol& s = sym[c.pos];
    if (s.id != c.left || s.next < 0 || sym[s.next].id != c.right)
      continue;  // stale: a neighbour merged first
    int32_t gone = s.next;
    s.id = c.result;
    s.next = sym[gone].next;
    if (s.next >= 0) sym[s.next].prev = c.pos;
    sym[gone].id = -1;
    if (s.prev >= 0) consider(s.prev);
    consider(c.pos);
  }
  symbols.clear();
  for (int32_t i = 0; i >= 0; i = sym[i].next) symbols.push_back(sym[i].id);
}

void BpeTokenizer::decodeModel(const std::vector<int64_t>& ids, std::string& out) const {
  for (int64_t id : ids) out += idToBytes_[id];
}

std::optional<int64_t> BpeTokenizer::modelTokenId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

}  // namespace fs::data::detail

#include "backend/data/tokenizer/tokenizer.h"

#include <algorithm>

namespace fs::data {

void AddedTokens::add(const std::string& content, int64_t id) {
  if (content.empty() || byContent_.count(content)) return;
  tokens_.push_back({content, id});
  byContent_.emplace(content, id);
  byId_.emplace(id, content);
  maxId_ = std::max(maxId_, id);
}

std::optional<int64_t> AddedTokens::find(std::string_view content) const {
  auto it = byContent_.find(std::string(content));
  if (it == byContent_.end()) return std::nullopt;
  return it->second;
}

const std::string* AddedTokens::content(int64_t id) const {
  auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : &it->second;
}

int AddedTokens::nextMatch(std::string_view text, size_t from, std::vector<size_t>& next) const {
  constexpr size_t npos = std::string_view::npos;
  int best = -1;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    // Re-search only a token whose cached occurrence was consumed (or overlapped) by an earlier match.
    if (next[i] == kStale || (next[i] != npos && next[i] < from))
      next[i] = text.find(tokens_[i].content, from);
    if (next[i] == npos) continue;
    if (best < 0 || next[i] < next[best] ||
        (next[i] == next[best] && tokens_[i].content.size() > tokens_[best].content.size()))
      best = static_cast<int>(i);
  }
  return best;
}

Tokenizer::~Tokenizer() = default;

std::vector<int64_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 4);
  if (bosId_) out.push_back(*bosId_);
  added_.split(
      text, [&](std::string_view piece) { encodeModel(piece, piece.data() == text.data(), out); },
      [&](int64_t id) { out.push_back(id); });
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  return decodeIds(ids);
}

std::string Tokenizer::decodeIds(const std::vector<int64_t>& ids) const {
  std::string out;
  std::vector<int64_t> run;  // consecutive model ids decode together (SentencePiece joins pieces)
  const int64_t model = modelSize();
  auto flush = [&] {
    if (!run.empty()) decodeModel(run, out);
    run.clear();
  };
  for (int64_t id : ids) {
    if (const std::string* text = added_.content(id)) {
      flush();
      out += *text;
    } else if (id >= 0 && id < model) {
      run.push_back(id);
    }
  }
  flush();
  return out;
}

int64_t Tokenizer::size() const {
  return std::max(modelSize(), added_.maxId() + 1);
}

std::optional<int64_t> Tokenizer::tokenId(std::string_view token) const {
  if (auto id = added_.find(token)) return id;
  return modelTokenId(token);
}

}  // namespace fs::data

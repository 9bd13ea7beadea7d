#include "backend/data/shardgen/bpe_trainer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace fs::data {

using protocol::Status;

namespace {

// GPT-2's byte -> printable code point map, as UTF-8.
std::string byteSymbol(unsigned char b) {
  char32_t cp = b;
  const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
      if (!p) ++n;
    }
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// Words as GPT-2's pre-tokenizer splits plain ASCII prose: an optional
// leading space, then a run of letters, of digits, or of other characters.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  const auto kind = [](unsigned char c) {
    return std::isalpha(c) ? 0 : std::isdigit(c) ? 1 : c == ' ' ? 2 : 3;
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    if (text[j] == ' ' && j + 1 < text.size() && text[j + 1] != ' ') ++j;
    const int k = kind(static_cast<unsigned char>(text[j]));
    ++j;
    while (j < text.size() && kind(static_cast<unsigned char>(text[j])) == k) ++j;
    out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

protocol::StatusOr<TrainedBpe> trainByteLevelBpe(const std::vector<std::string>& corpus,
                                                 const std::vector<std::string>& specials, size_t vocabSize) {
  std::map<std::vector<std::string>, int64_t> wordFreq;
  std::set<std::string> symbols;
  for (const auto& text : corpus) {
    for (const auto& w : words(text)) {
      std::vector<std::string> syms;
      for (unsigned char b : w) {
        syms.push_back(byteSymbol(b));
        symbols.insert(syms.back());
      }
      ++wordFreq[syms];
    }
  }
  TrainedBpe bpe;
  bpe.vocab = specials;
  bpe.vocab.insert(bpe.vocab.end(), symbols.begin(), symbols.end());
  if (bpe.vocab.size() > vocabSize) {
    return Status::invalidArgument("a vocabulary of " + std::to_string(vocabSize) + " cannot hold the " +
                                   std::to_string(bpe.vocab.size()) +
                                   " specials and byte symbols of the text");
  }
  while (bpe.vocab.size() < vocabSize) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [syms, f] : wordFreq) {
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += f;
    }
    if (pairs.empty()) break;
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (it->second > best->second) best = it;  // map order breaks ties by text
    }
    const auto [a, b] = best->first;
    bpe.merges.push_back(a + " " + b);
    bpe.vocab.push_back(a + b);
    std::map<std::vector<std::string>, int64_t> merged;
    for (const auto& [syms, f] : wordFreq) {
      std::vector<std::string> out;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          out.push_back(a + b);
          ++i;
        } else {
          out.push_back(syms[i]);
        }
      }
      merged[out] += f;
    }
    wordFreq = std::move(merged);
  }
  return bpe;
}

Status writeBpeFiles(const TrainedBpe& bpe, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::ioError(dir + ": cannot create: " + ec.message());
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (size_t i = 0; i < bpe.vocab.size(); ++i) vocab[bpe.vocab[i]] = i;
  std::string merges = "#version: 0.2\n";
  for (const auto& m : bpe.merges) merges += m + "\n";
  const nlohmann::json specials = {
      {"bos_token", "</s>"}, {"eos_token", "</s>"}, {"pad_token", "<pad>"}, {"unk_token", "<unk>"}};
  const std::pair<const char*, std::string> files[] = {
      {"vocab.json", vocab.dump()}, {"merges.txt", merges}, {"special_tokens_map.json", specials.dump(2)}};
  for (const auto& [name, text] : files) {
    const auto path = std::filesystem::path(dir) / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::ioError(path.string() + ": write failed");
  }
  return Status::ok();
}

}  // namespace fs::data

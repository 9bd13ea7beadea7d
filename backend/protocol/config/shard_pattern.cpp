#include "backend/protocol/config/shard_pattern.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string_view>
#include <variant>

namespace fs::protocol {
namespace {

constexpr uint64_t kCountCap = uint64_t{1} << 62;

// NOTE [Pattern limits]: a pattern comes from a config, which may come from
// someone else and may be 1 MiB long. Parsing and expanding recurse once per
// nested '{' and once per brace group of a pattern, so both are limited (a
// spec of 100,000 '{' overflowed the stack); no shard list needs more. Range
// arithmetic is unsigned: {-9223372036854775808..9223372036854775807} is a
// count, not an overflow.
constexpr int kMaxBraceDepth = 16;
constexpr int kMaxBraceGroups = 64;

constexpr std::string_view kLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// A pattern is a sequence of literal text and brace groups; each group is a
// list of alternatives (themselves patterns) or a range.
struct Range {
  int64_t from = 0, to = 0, step = 1;  // letters: indices into kLetters
  size_t width = 0;                    // zero padding, from the wider endpoint written with a leading 0
  bool letters = false;
  uint64_t span() const {
    return to >= from ? static_cast<uint64_t>(to) - static_cast<uint64_t>(from)
                      : static_cast<uint64_t>(from) - static_cast<uint64_t>(to);
  }
  uint64_t count() const { return std::min(span() / static_cast<uint64_t>(step), kCountCap - 1) + 1; }
  int64_t at(uint64_t i) const {  // i < count(): stays between from and to
    const uint64_t d = i * static_cast<uint64_t>(step);
    return static_cast<int64_t>(to >= from ? static_cast<uint64_t>(from) + d
                                           : static_cast<uint64_t>(from) - d);
  }
  // The i-th entry's text: a letter, or the number zero-padded after its sign ("%0*d").
  std::string text(uint64_t i) const {
    if (letters) return std::string(1, kLetters[static_cast<size_t>(at(i))]);
    std::string n = std::to_string(at(i));
    if (n.size() < width) n.insert(n[0] == '-' ? 1 : 0, width - n.size(), '0');
    return n;
  }
};
struct Pattern;
struct Group {
  std::vector<Pattern> alternatives;
  bool isRange = false;
  Range range;
};
struct Pattern {
  std::vector<std::variant<std::string, Group>> parts;
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  StatusOr<Pattern> parse() {
    auto p = parsePattern(false);
    if (!p) return p;
    if (pos_ != s_.size()) return error("unexpected '" + std::string(1, s_[pos_]) + "'");
    return p;
  }

 private:
  StatusOr<Pattern> parsePattern(bool inGroup) {
    Pattern p;
    std::string lit;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (inGroup && (c == ',' || c == '}')) break;
      if (c == '}') return error("'}' without a matching '{'");
      if (c == '\\') {  // an escape: the next character as it is, the backslash dropped
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] != '\n') {
          lit += s_[pos_ + 1];
        } else {
          lit.append(s_, pos_, 2);  // braceexpand's "\\(.)" matches neither a newline nor the end
        }
        pos_ = std::min(pos_ + 2, s_.size());
        continue;
      }
      if (c == '{') {
        if (!lit.empty()) p.parts.emplace_back(std::move(lit));
        lit.clear();
        auto g = parseGroup();
        if (!g.isOk()) return g.status();
        p.parts.emplace_back(std::move(g.value()));
        continue;
      }
      lit += c;
      ++pos_;
    }
    if (!lit.empty()) p.parts.emplace_back(std::move(lit));
    return p;
  }

  StatusOr<Group> parseGroup() {
    const size_t open = pos_++;
    if (++groups_ > kMaxBraceGroups) {
      return error("more than " + std::to_string(kMaxBraceGroups) + " brace groups (the '{' at position " +
                   std::to_string(open + 1) + ")");
    }
    // A range: {a..b} or {a..b..step} (NOTE [braceexpand grammar]).
    if (const size_t close = matchingClose(open); close != std::string::npos) {
      Group g;
      auto range = parseRange(s_.substr(open + 1, close - open - 1), &g.range);
      if (!range) return range.status();
      if (range.value()) {
        g.isRange = true;
        pos_ = close + 1;
        return g;
      }
    }
    if (depth_ == kMaxBraceDepth) {
      return error("'{' at position " + std::to_string(open + 1) + " is nested deeper than " +
                   std::to_string(kMaxBraceDepth) + " levels");
    }
    ++depth_;
    Group g;
    while (true) {
      auto alt = parsePattern(true);
      if (!alt) return alt.status();
      g.alternatives.push_back(std::move(alt.value()));
      if (pos_ >= s_.size()) {
        pos_ = open;
        return error("'{' at position " + std::to_string(open + 1) + " is never closed");
      }
      if (s_[pos_++] == '}') break;
    }
    --depth_;
    if (g.alternatives.size() == 1) {  // no comma: literal text, braces kept
      Pattern braced;
      braced.parts.emplace_back(std::string("{"));
      for (auto& part : g.alternatives.front().parts) braced.parts.push_back(std::move(part));
      braced.parts.emplace_back(std::string("}"));
      g.alternatives.front() = std::move(braced);
    }
    return g;
  }

  // The '}' closing the '{' at `open` (nested braces and escapes skipped), or npos.
  size_t matchingClose(size_t open) const {
    int depth = 0;
    for (size_t i = open; i < s_.size(); ++i) {
      if (s_[i] == '\\') {
        ++i;
      } else if (s_[i] == '{') {
        ++depth;
      } else if (s_[i] == '}' && --depth == 0) {
        return i;
      }
    }
    return std::string::npos;
  }

  // True when `body` is a range (NOTE [braceexpand grammar]), false when it is
  // not; an error when its numbers do not fit in 64 bits.
  StatusOr<bool> parseRange(const std::string& body, Range* r) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
      const size_t dots = body.find("..", start);
      parts.push_back(body.substr(start, dots == std::string::npos ? std::string::npos : dots - start));
      if (dots == std::string::npos) break;
      start = dots + 2;
    }
    if (parts.size() < 2 || parts.size() > 3) return false;
    auto digits = [](std::string_view t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    auto integer = [&](std::string_view t) { return digits(t.substr(t.starts_with("-") ? 1 : 0)); };
    auto letter = [](const std::string& t) {
      return t.size() == 1 && kLetters.find(t[0]) != std::string::npos;
    };
    std::string_view step = parts.size() == 3 ? std::string_view(parts[2]) : std::string_view("1");
    if (step.starts_with("-")) step.remove_prefix(1);  // braceexpand ignores the sign
    if (!digits(step)) return false;
    const bool numbers = integer(parts[0]) && integer(parts[1]);
    if (!numbers && !(letter(parts[0]) && letter(parts[1]))) return false;
    auto num = [&](std::string_view t, int64_t* out) {
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
      if (ec == std::errc() && p == t.data() + t.size()) return Status::ok();
      return error("'{" + body + "}': " + std::string(t) + " does not fit in 64 bits");
    };
    if (Status st = num(step, &r->step); !st) return st;
    if (r->step == 0) r->step = 1;
    if (!numbers) {
      r->letters = true;
      r->from = static_cast<int64_t>(kLetters.find(parts[0][0]));
      r->to = static_cast<int64_t>(kLetters.find(parts[1][0]));
      return true;
    }
    if (Status st = num(parts[0], &r->from); !st) return st;
    if (Status st = num(parts[1], &r->to); !st) return st;
    auto padded = [](const std::string& t) {
      return t != "0" && t != "-0" && (t.starts_with("0") || t.starts_with("-0"));
    };
    if (padded(parts[0]) || padded(parts[1])) r->width = std::max(parts[0].size(), parts[1].size());
    return true;
  }

  Status error(const std::string& what) {
    return Status::invalidArgument("shard pattern '" + s_ + "': " + what);
  }

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;   // '{' lists open around pos_
  int groups_ = 0;  // brace groups so far
};

uint64_t mulCapped(uint64_t a, uint64_t b) {
  return (a != 0 && b > kCountCap / a) ? kCountCap : a * b;
}

uint64_t countPattern(const Pattern& p);
uint64_t countGroup(const Group& g) {
  if (g.isRange) return g.range.count();
  uint64_t n = 0;
  for (const auto& a : g.alternatives) n = std::min(kCountCap, n + countPattern(a));
  return n;
}
uint64_t countPattern(const Pattern& p) {
  uint64_t n = 1;
  for (const auto& part : p.parts) {
    if (const auto* g = std::get_if<Group>(&part)) n = mulCapped(n, countGroup(*g));
  }
  return n;
}

// Expansion stops once `out` holds `cap` entries (the first ones, in order).
void expandPattern(const Pattern& p, size_t part, std::string prefix, std::vector<std::string>* out,
                   uint64_t cap);

void expandGroupThen(const Pattern& p, size_t part, const Group& g, const std::string& prefix,
                     std::vector<std::string>* out, uint64_t cap) {
  if (g.isRange) {
    for (uint64_t i = 0; i < g.range.count() && out->size() < cap; ++i) {
      expandPattern(p, part + 1, prefix + g.range.text(i), out, cap);
    }
    return;
  }
  for (const auto& alt : g.alternatives) {
    std::vector<std::string> heads;
    expandPattern(alt, 0, prefix, &heads, cap - out->size());
    for (auto& h : heads) {
      if (out->size() >= cap) return;
      expandPattern(p, part + 1, h, out, cap);
    }
  }
}

void expandPattern(const Pattern& p, size_t part, std::string prefix, std::vector<std::string>* out,
                   uint64_t cap) {
  if (out->size() >= cap) return;
  if (part == p.parts.size()) {
    out->push_back(std::move(prefix));
    return;
  }
  if (const auto* lit = std::get_if<std::string>(&p.parts[part])) {
    expandPattern(p, part + 1, prefix + *lit, out, cap);
  } else {
    expandGroupThen(p, part, std::get<Group>(p.parts[part]), prefix, out, cap);
  }
}

// NOTE [Finding pipes without expanding]: whether an expansion starts with
// "pipe:" depends only on its first five characters, so the expansions are
// tracked by how much of "pipe:" they have matched so far (0..5 characters;
// anything else can no longer become a pipe and is dropped), with a count per
// state. A numeric range writes digits or '-', neither in "pipe:", so it ends
// every expansion still short of the full prefix; a letter range (at most 52
// entries) goes through its letters one by one. The work is linear in the
// pattern however many shards it names.
constexpr std::string_view kPipe = "pipe:";
using PipeStates = std::array<uint64_t, 6>;  // expansions that matched i characters of "pipe:"

PipeStates pipeStatesAfter(const Pattern& p, PipeStates in);

PipeStates pipeStatesAfterChar(const PipeStates& states, char c) {
  PipeStates next{};
  next[kPipe.size()] = states[kPipe.size()];
  for (size_t i = 0; i < kPipe.size(); ++i) {
    if (kPipe[i] == c) next[i + 1] = std::min(kCountCap, next[i + 1] + states[i]);  // ':' again: add
  }
  return next;
}

PipeStates pipeStatesAfterGroup(const Group& g, const PipeStates& in) {
  PipeStates out{};
  if (g.isRange && g.range.letters) {
    for (uint64_t i = 0; i < g.range.count(); ++i) {
      const PipeStates next = pipeStatesAfterChar(in, g.range.text(i)[0]);
      for (size_t k = 0; k < out.size(); ++k) out[k] = std::min(kCountCap, out[k] + next[k]);
    }
    return out;
  }
  if (g.isRange) {
    out[kPipe.size()] = mulCapped(in[kPipe.size()], g.range.count());
    return out;
  }
  for (const auto& alt : g.alternatives) {
    const PipeStates next = pipeStatesAfter(alt, in);
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::min(kCountCap, out[i] + next[i]);
  }
  return out;
}

PipeStates pipeStatesAfter(const Pattern& p, PipeStates states) {
  for (const auto& part : p.parts) {
    if (const auto* g = std::get_if<Group>(&part)) {
      states = pipeStatesAfterGroup(*g, states);
      continue;
    }
    for (const char c : std::get<std::string>(part)) states = pipeStatesAfterChar(states, c);
  }
  return states;
}

std::vector<std::string> splitSpecs(const std::string& spec) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t sep = spec.find("::", start);
    out.push_back(spec.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return out;
}

}  // namespace

std::vector<std::string> shardSpecParts(const std::string& spec) {
  return splitSpecs(spec);
}

StatusOr<uint64_t> countPipeShards(const std::string& part) {
  auto p = Parser(part).parse();
  if (!p) return p.status();
  PipeStates start{};
  start[0] = 1;
  return pipeStatesAfter(p.value(), start)[kPipe.size()];
}

StatusOr<uint64_t> countShards(const std::string& spec) {
  if (spec.empty()) return Status::invalidArgument("shard list is empty");
  uint64_t total = 0;
  for (const auto& one : splitSpecs(spec)) {
    if (one.empty())
      return Status::invalidArgument("shard list '" + spec + "' has an empty part between '::'");
    auto p = Parser(one).parse();
    if (!p) return p.status();
    total = std::min(kCountCap, total + countPattern(p.value()));
  }
  return total;
}

StatusOr<std::vector<std::string>> expandShards(const std::string& spec, uint64_t limit) {
  auto n = countShards(spec);
  if (!n) return n.status();
  if (n.value() > limit) {
    return Status::invalidArgument("shard list '" + spec + "' names " + std::to_string(n.value()) +
                                   " shards, more than the limit of " + std::to_string(limit));
  }
  std::vector<std::string> out;
  out.reserve(n.value());
  for (const auto& one : splitSpecs(spec)) {
    auto p = Parser(one).parse();
    expandPattern(p.value(), 0, "", &out, std::numeric_limits<uint64_t>::max());
  }
  return out;
}

StatusOr<std::vector<std::string>> firstShards(const std::string& spec, uint64_t count) {
  auto n = countShards(spec);
  if (!n) return n.status();
  std::vector<std::string> out;
  out.reserve(std::min(n.value(), count));
  for (const auto& one : splitSpecs(spec)) {
    if (out.size() >= count) break;
    auto p = Parser(one).parse();
    expandPattern(p.value(), 0, "", &out, count);
  }
  return out;
}

}  // namespace fs::protocol

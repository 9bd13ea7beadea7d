// SLURM's list syntaxes (declared in world_env.h): host lists and tasks-per-node counts.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/launch/world_env.h"

namespace fs::launch {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr std::uint64_t kMaxRangeHosts = 65536;  // SLURM's MAX_RANGE
constexpr std::size_t kMaxHosts = 1u << 20;      // the whole list

struct NumberRange {
  std::uint64_t lo = 0, hi = 0;
  std::size_t width = 0;  // digits of `lo` as written: the zero padding of every number
};

bool allDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

bool parseUnsigned(std::string_view s, std::uint64_t* out) {
  if (!allDigits(s)) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string padded(std::uint64_t n, std::size_t width) {
  std::string digits = std::to_string(n);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

class HostlistParser {
 public:
  explicit HostlistParser(std::string_view list) : list_(list) {}

  StatusOr<std::vector<std::string>> run() {
    for (char c : list_) {
      if (c == '\\' || c == '"' || c == '\'')
        return fail(std::string("'") + c + "' (no escapes or quotes in host lists)");
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return fail("a control character");
    }
    auto tokens = splitEntries();
    if (!tokens) return tokens.status();
    for (const std::string& token : tokens.value()) {
      Status s = expandEntry(token);
      if (!s) return s;
    }
    return std::move(hosts_);
  }

 private:
  Status fail(const std::string& what, std::string_view entry = {}) const {
    std::string where = entry.empty() || entry == list_ ? "" : " in '" + std::string(entry) + "'";
    return Status::invalidArgument("invalid SLURM host list '" + std::string(list_) + "': " + what + where);
  }

  // Entries separated by ',', ' ' or '\t' outside brackets; empty ones are skipped.
  StatusOr<std::vector<std::string>> splitEntries() const {
    std::vector<std::string> out;
    std::string current;
    int depth = 0;
    for (char c : list_) {
      if (c == '[') {
        if (depth > 0) return fail("'[' inside brackets");
        ++depth;
      } else if (c == ']') {
        if (depth == 0) return fail("']' without '['");
        --depth;
      } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t')) {
        if (!current.empty()) out.push_back(std::move(current));
        current.clear();
        continue;
      }
      current += c;
    }
    if (depth != 0) return fail("'[' without ']'");
    if (!current.empty()) out.push_back(std::move(current));
    return out;
  }

  // "1-3,07" -> ranges; errors name the entry.
  StatusOr<std::vector<NumberRange>> parseRanges(std::string_view text, std::string_view entry) const {
    std::vector<NumberRange> out;
    std::size_t start = 0;
    while (true) {
      std::size_t comma = text.find(',', start);
      std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
      if (item.empty()) return fail("an empty number in brackets", entry);
      std::size_t dash = item.find('-');
      std::string_view lo = item.substr(0, dash);
      std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
      NumberRange r;
      r.width = lo.size();
      if (!parseUnsigned(lo, &r.lo) || !parseUnsigned(hi, &r.hi)) {
        return fail("'" + std::string(item) + "' is not a number or a range N-M", entry);
      }
      if (r.hi < r.lo) return fail("range '" + std::string(item) + "' ends below its start", entry);
      if (r.hi - r.lo + 1 > kMaxRangeHosts) {
        return fail(
            "range '" + std::string(item) + "' holds more than " + std::to_string(kMaxRangeHosts) + " hosts",
            entry);
      }
      out.push_back(r);
      if (comma == std::string_view::npos) return out;
      start = comma + 1;
    }
  }

  Status expandEntry(const std::string& entry) {
    std::size_t open = entry.rfind('[');
    if (open == std::string::npos) return push(entry, entry);
    std::size_t close = entry.find(']', open);
    if (close + 1 != entry.size()) {
      return fail("text '" + entry.substr(close + 1) + "' after the last ']' (SLURM allows none)", entry);
    }
    auto ranges = parseRanges(std::string_view(entry).substr(open + 1, close - open - 1), entry);
    if (!ranges) return ranges.status();
    return pushRanges(entry.substr(0, open), ranges.value(), entry);
  }

  // SLURM's _push_range_list: the last group of the prefix is the outer loop, and the
  // prefix before it is expanded again (recursively) for each of its numbers.
  Status pushRanges(const std::string& prefix, const std::vector<NumberRange>& last,
                    const std::string& entry) {
    std::size_t open = prefix.rfind('[');
    if (open == std::string::npos) {
      for (const NumberRange& r : last) {
        for (std::uint64_t n = r.lo; n <= r.hi; ++n) {
          Status s = push(prefix + padded(n, r.width), entry);
          if (!s) return s;
        }
      }
      return Status::ok();
    }
    std::size_t close = prefix.find(']', open);
    auto outer = parseRanges(std::string_view(prefix).substr(open + 1, close - open - 1), entry);
    if (!outer) return outer.status();
    std::string before = prefix.substr(0, open), after = prefix.substr(close + 1);
    for (const NumberRange& r : outer.value()) {
      for (std::uint64_t n = r.lo; n <= r.hi; ++n) {
        Status s = pushRanges(before + padded(n, r.width) + after, last, entry);
        if (!s) return s;
      }
    }
    return Status::ok();
  }

  Status push(std::string host, const std::string& entry) {
    if (hosts_.size() >= kMaxHosts) return fail("more than " + std::to_string(kMaxHosts) + " hosts", entry);
    hosts_.push_back(std::move(host));
    return Status::ok();
  }

  std::string_view list_;
  std::vector<std::string> hosts_;
};

}  // namespace

StatusOr<std::vector<std::string>> expandSlurmHostlist(std::string_view list) {
  return HostlistParser(list).run();
}

StatusOr<std::vector<std::int64_t>> parseSlurmTasksPerNode(std::string_view text) {
  auto bad = [&](const std::string& what) {
    return Status::invalidArgument("invalid SLURM tasks-per-node list '" + std::string(text) + "': " + what +
                                   "; expected counts like 4 or 2(x3),1");
  };
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  if (text.empty()) return bad("it is empty");
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    std::uint64_t count = 0, repeat = 1;
    std::size_t paren = item.find('(');
    std::string_view number = item.substr(0, paren);
    if (paren != std::string_view::npos) {
      std::string_view rest = item.substr(paren);
      if (rest.size() < 4 || !rest.starts_with("(x") || !rest.ends_with(")") ||
          !parseUnsigned(rest.substr(2, rest.size() - 3), &repeat) || repeat == 0) {
        return bad("'" + std::string(item) + "' has a bad repeat, expected N(xM)");
      }
    }
    if (!parseUnsigned(number, &count) || count == 0 || count > (1u << 20)) {
      return bad("'" + std::string(item) + "' is not a positive count");
    }
    if (out.size() + repeat > kMaxHosts) return bad("more than " + std::to_string(kMaxHosts) + " nodes");
    out.insert(out.end(), repeat, static_cast<std::int64_t>(count));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace fs::launch

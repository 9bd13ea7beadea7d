// Fuzz target, differential: the pipe count that pipe approval relies on
// (NOTE [Pipe approval] in backend/protocol/config/pipe_commands.h) against
// the expansion itself. For a spec whose expansion succeeds, every "::" part
// (shardSpecParts) must have countPipeShards(part) equal to the number of
// "pipe:" entries of expandShards(part), the parts' counts must add up to
// those of expandShards(spec), and pipeSourcesOfSpec(spec) must list exactly
// the parts whose count is not 0: a pipe command that no listed source
// accounts for would run unapproved.
//
// Input: the first byte picks the form. Odd: a structured spec built from the
// rest (parts joined by "::", each a sequence of literals drawn from the
// pieces of "pipe:", numeric ranges, and {a,b} lists nested up to 3 deep), so
// the fuzzer reaches the shapes that matter ("pi{pe,g}:x", "{a,pipe:}{1..3}")
// quickly. Even: the rest as the spec's text. Expansion is limited to
// kLimit entries, so no input can allocate much.
#include <cstdio>

#include "backend/protocol/config/pipe_commands.h"
#include "backend/protocol/config/shard_pattern.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace proto = fs::protocol;

constexpr std::uint64_t kLimit = 4096;

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  unsigned next() { return at_ < size_ ? data_[at_++] : 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

void number(Bytes& in, std::string* out) {
  const unsigned b = in.next();
  std::string n = std::to_string(b % 13);
  if (b & 0x40) n = "0" + n;  // zero padding
  if (b & 0x80) n = "-" + n;
  *out += n;
}

void sequence(Bytes& in, int depth, std::string* out) {
  static const char* const kPieces[] = {"pipe:", "pipe", "pi", "pe", "p", "i", "e", ":",  "::", "cat ",
                                        "/d/",   ".tar", "-",  "x",  ",", "{", "}", "..", " -", "s3://b/"};
  const unsigned n = 1 + in.next() % 5;
  for (unsigned i = 0; i < n && !in.empty(); ++i) {
    const unsigned kind = in.next();
    switch (kind % 5) {
      case 0:
      case 1:
        *out += kPieces[(kind / 5) % (sizeof(kPieces) / sizeof(kPieces[0]))];
        break;
      case 2: {  // {a..b} or {a..b..step}
        *out += '{';
        number(in, out);
        *out += "..";
        number(in, out);
        if (kind & 0x20) *out += ".." + std::to_string(in.next() % 5);  // step 0 means 1, as braceexpand
        *out += '}';
        break;
      }
      case 3: {  // {alt,alt,...}
        if (depth >= 3) {
          *out += 'q';
          break;
        }
        *out += '{';
        const unsigned alternatives = 1 + (kind / 5) % 3;
        for (unsigned a = 0; a < alternatives; ++a) {
          if (a > 0) *out += ',';
          if (in.next() % 4 != 0) sequence(in, depth + 1, out);  // sometimes an empty alternative
        }
        *out += '}';
        break;
      }
      default:
        *out += static_cast<char>(in.next());
        break;
    }
  }
}

std::uint64_t pipes(const std::vector<std::string>& shards) {
  std::uint64_t n = 0;
  for (const auto& s : shards) n += s.starts_with("pipe:") ? 1 : 0;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string spec;
  if (data[0] & 1) {
    Bytes in(data + 1, size - 1);
    const unsigned parts = 1 + in.next() % 3;
    for (unsigned p = 0; p < parts; ++p) {
      if (p > 0) spec += "::";
      sequence(in, 0, &spec);
    }
  } else {
    spec.assign(fs::fuzz::text(data + 1, size - 1));
  }

  auto all = proto::expandShards(spec, kLimit);
  if (!all) {
    // Every part that does not parse is listed when it mentions "pipe:" at all (the
    // approval then shows it and the run fails validation), so nothing to compare.
    return 0;
  }
  const std::string shown = "spec '" + spec + "'";
  std::uint64_t total = 0;
  std::vector<std::string> listed;
  for (const std::string& part : proto::shardSpecParts(spec)) {
    auto counted = proto::countPipeShards(part);
    fs::fuzz::check(counted.isOk(), shown + ": countPipeShards fails on part '" + part +
                                        "' of a spec that expands: " + counted.status().message());
    auto expanded = proto::expandShards(part, kLimit);
    fs::fuzz::check(expanded.isOk(), shown + ": part '" + part + "' does not expand alone");
    const std::uint64_t want = pipes(expanded.value());
    fs::fuzz::check(counted.value() == want,
                    shown + ": countPipeShards('" + part + "') = " + std::to_string(counted.value()) +
                        " but its expansion has " + std::to_string(want) + " pipe: entries");
    total += want;
    if (want > 0) listed.push_back(part);
  }
  fs::fuzz::check(total == pipes(all.value()), shown + ": the parts' pipe: entries add up to " +
                                                   std::to_string(total) + ", the spec's expansion has " +
                                                   std::to_string(pipes(all.value())));
  fs::fuzz::check(proto::pipeSourcesOfSpec(spec) == listed,
                  shown + ": pipeSourcesOfSpec does not list exactly the parts with pipe: entries");
  return 0;
}

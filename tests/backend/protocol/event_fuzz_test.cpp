// Fuzz-style tests of the event decoder: random bytes and random mutations of valid
// lines, fed in random chunk sizes. Fixed seeds, so every run is the same run.
// Invariants: nothing throws or crashes; every error has a message naming the source,
// line and offset; chunking never changes the result; offsets are consistent; anything
// decoded re-encodes to a line that decodes to the same thing.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "backend/protocol/wire/event_codec.h"
#include "tests/backend/protocol/sample_events.h"

namespace fs::protocol {
namespace {

using Kind = DecodedLine::Kind;

std::vector<DecodedLine> feedInChunks(std::string_view bytes, std::mt19937& rng, EventDecoder* decoder) {
  std::vector<DecodedLine> out;
  std::uniform_int_distribution<std::size_t> chunk(1, 97);
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t n = std::min(chunk(rng), bytes.size() - i);
    for (auto& r : decoder->feed(bytes.substr(i, n))) out.push_back(std::move(r));
    i += n;
  }
  return out;
}

void checkInvariants(const std::string& bytes, std::mt19937& rng) {
  EventDecoder whole_decoder;
  std::vector<DecodedLine> whole;
  ASSERT_NO_THROW(whole = whole_decoder.feed(bytes));
  EventDecoder chunked_decoder;
  std::vector<DecodedLine> chunked;
  ASSERT_NO_THROW(chunked = feedInChunks(bytes, rng, &chunked_decoder));

  ASSERT_EQ(whole.size(), chunked.size());
  EXPECT_EQ(whole_decoder.resumeOffset(), chunked_decoder.resumeOffset());
  std::size_t last_nl = bytes.rfind('\n');
  EXPECT_EQ(whole_decoder.resumeOffset(), last_nl == std::string::npos ? 0 : last_nl + 1);

  std::uint64_t prev_end = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const DecodedLine& a = whole[i];
    const DecodedLine& b = chunked[i];
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.line, b.line);
    EXPECT_EQ(a.error.message(), b.error.message());
    EXPECT_GE(a.offset, prev_end);
    EXPECT_GT(a.end_offset, a.offset);
    EXPECT_LE(a.end_offset, bytes.size());
    EXPECT_EQ(bytes[a.end_offset - 1], '\n');
    prev_end = a.end_offset;
    switch (a.kind) {
      case Kind::kError:
        EXPECT_FALSE(a.error.isOk());
        EXPECT_EQ(a.error.message().rfind("events.jsonl line " + std::to_string(a.line), 0), 0u)
            << a.error.message();
        break;
      case Kind::kSkipped:
        EXPECT_TRUE(a.error.isOk());
        EXPECT_TRUE(a.seq.has_value());
        break;
      case Kind::kEvent: {
        // Compare encodings, not values: NaN != NaN but encodes the same.
        std::string line = encodeEventLine(a.event);
        auto again = decodeEventLine(std::string_view(line).substr(0, line.size() - 1), 1, 0);
        ASSERT_TRUE(again.has_value());
        ASSERT_EQ(again->kind, Kind::kEvent) << again->error.message();
        EXPECT_EQ(encodeEventLine(again->event), line);
        EXPECT_EQ(encodeEventLine(b.event), line);
        break;
      }
    }
  }
}

std::string validStream() {
  EventEncoder encoder(0, [] { return std::int64_t{1717000000000}; });
  std::string all;
  for (const auto& body : testing::fullSampleBodies()) all += encoder.encode(body);
  for (const auto& body : testing::minimalSampleBodies()) all += encoder.encode(body);
  return all;
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const std::string kInteresting[] = {"\"",
                                             "\\",
                                             "{",
                                             "}",
                                             "[",
                                             "]",
                                             ",",
                                             ":",
                                             "\n",
                                             "\r\n",
                                             "null",
                                             "-1",
                                             "1e999",
                                             "\"nan\"",
                                             "2.0",
                                             "\"v\"",
                                             "true",
                                             "\xC3\x28",
                                             "\xEF\xBB\xBF",
                                             "18446744073709551616",
                                             "0.5",
                                             "\"\\u0000\""};
  std::uniform_int_distribution<int> op(0, 6);
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    std::size_t pos = rng() % s.size();
    std::size_t len = 1 + rng() % std::min<std::size_t>(16, s.size() - pos);
    switch (op(rng)) {
      case 0:
        s[pos] = static_cast<char>(rng() & 0xFF);
        break;
      case 1:
        s.erase(pos, len);
        break;
      case 2:
        s.insert(pos, 1, static_cast<char>(rng() & 0xFF));
        break;
      case 3:
        s.insert(pos, s.substr(pos, len));
        break;
      case 4:
        s.insert(pos, kInteresting[rng() % std::size(kInteresting)]);
        break;
      case 5:
        s.replace(pos, len, kInteresting[rng() % std::size(kInteresting)]);
        break;
      case 6:
        s.resize(pos);
        break;  // truncation, as a crash mid-write
    }
  }
  return s;
}

TEST(EventFuzzTest, RandomBytes) {
  std::mt19937 rng(0xF1A316);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string bytes(rng() % 512, '\0');
    for (auto& c : bytes) {
      // Bias towards JSON-ish bytes and newlines so lines are short and varied.
      unsigned r = rng() % 10;
      c = r < 2   ? '\n'
          : r < 5 ? "{}[]\":,0123456789.-tfnulevseqtype"[rng() % 33]
                  : static_cast<char>(rng() & 0xFF);
    }
    checkInvariants(bytes, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(EventFuzzTest, MutatedValidLines) {
  std::mt19937 rng(20240601);
  const std::string valid = validStream();
  {
    // Sanity: the unmutated stream is all events.
    EventDecoder d;
    for (const auto& r : d.feed(valid)) ASSERT_EQ(r.kind, Kind::kEvent) << r.error.message();
  }
  int events = 0, errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = mutate(valid, rng);
    checkInvariants(bytes, rng);
    if (HasFatalFailure()) return;
    EventDecoder d;
    for (const auto& r : d.feed(bytes)) {
      events += r.kind == Kind::kEvent;
      errors += r.kind == Kind::kError;
    }
  }
  EXPECT_GT(events, 0);
  EXPECT_GT(errors, 0);
}

TEST(EventFuzzTest, MutatedSingleLines) {
  std::mt19937 rng(7);
  EventEncoder encoder;
  std::vector<std::string> lines;
  for (const auto& body : testing::fullSampleBodies()) lines.push_back(encoder.encode(body));
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string& line = lines[rng() % lines.size()];
    std::string body = mutate(line.substr(0, line.size() - 1), rng);
    std::erase(body, '\n');
    checkInvariants(body + "\n", rng);
    if (HasFatalFailure()) return;
  }
}

TEST(EventFuzzTest, PathologicalNesting) {
  std::mt19937 rng(1);
  std::string deep = std::string(200000, '[') + "\n" + std::string(100000, '{') + "\n";
  deep += R"({"v":"1.0","seq":0,"t":0,"type":"step","loss":)" + std::string(5000, '[') + "\n";
  checkInvariants(deep, rng);
  EventDecoder d;
  auto records = d.feed(deep);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r.kind, Kind::kError);
    EXPECT_NE(r.error.message().find("nested deeper"), std::string::npos) << r.error.message();
  }
}

}  // namespace
}  // namespace fs::protocol

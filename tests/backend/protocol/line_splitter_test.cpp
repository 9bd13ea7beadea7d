// LineSplitter (NOTE [Bounded lines]): lines across chunks, offsets and numbers, and
// a multi-megabyte line without a newline held to the limit, handed out once
// truncated, the line after it intact; EventDecoder reports such a line and reads on.
#include "backend/protocol/wire/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/protocol/wire/event_codec.h"

namespace fs::protocol {
namespace {

struct Got {
  std::string text;
  bool truncated;
  std::uint64_t offset;
  std::uint64_t number;
  bool operator==(const Got&) const = default;
};

std::vector<Got> feed(LineSplitter& s, std::string_view bytes) {
  std::vector<Got> out;
  s.feed(bytes, [&](const LineSplitter::Line& l) {
    out.push_back({std::string(l.text), l.truncated, l.offset, l.number});
  });
  return out;
}

TEST(LineSplitter, LinesAcrossChunksWithOffsetsAndNumbers) {
  LineSplitter s(16, 100);
  EXPECT_TRUE(feed(s, "ab").empty());
  EXPECT_EQ(s.bufferedBytes(), 2u);
  EXPECT_EQ(feed(s, "c\r\nd\n\ne"),
            (std::vector<Got>{{"abc\r", false, 100, 0}, {"d", false, 105, 1}, {"", false, 107, 2}}));
  EXPECT_EQ(s.lineStart(), 108u);
  EXPECT_EQ(s.position(), 109u);
  EXPECT_EQ(s.linesEnded(), 3u);
  std::vector<Got> flushed;
  s.flush([&](const LineSplitter::Line& l) {
    flushed.push_back({std::string(l.text), l.truncated, l.offset, l.number});
  });
  EXPECT_EQ(flushed, (std::vector<Got>{{"e", false, 108, 3}}));
  EXPECT_EQ(s.bufferedBytes(), 0u);
}

TEST(LineSplitter, ALineAtTheLimitIsWholeOneByteMoreIsTruncated) {
  LineSplitter s(4);
  EXPECT_EQ(feed(s, "abcd\n"), (std::vector<Got>{{"abcd", false, 0, 0}}));
  EXPECT_EQ(feed(s, "ab"), std::vector<Got>{});
  EXPECT_EQ(feed(s, "cde"), (std::vector<Got>{{"abcd", true, 5, 1}}));
  EXPECT_TRUE(s.skipping());
  EXPECT_EQ(feed(s, "fgh\nok\n"), (std::vector<Got>{{"ok", false, 14, 2}}));
  EXPECT_EQ(s.truncatedLines(), 1u);
}

TEST(LineSplitter, AMultiMegabyteLineWithoutNewlineIsBoundedAndTheNextLineIsIntact) {
  constexpr std::size_t kLimit = 64u << 10;
  LineSplitter s(kLimit);
  std::vector<Got> got;
  const std::string mib(1u << 20, 'x');
  for (int i = 0; i < 8; ++i) {
    for (auto& g : feed(s, mib)) got.push_back(std::move(g));
    EXPECT_LE(s.bufferedBytes(), kLimit);
  }
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].truncated);
  EXPECT_EQ(got[0].text, std::string(kLimit, 'x'));
  EXPECT_EQ(s.bufferedBytes(), 0u);
  EXPECT_EQ(s.lineStart(), 0u) << "the long line has not ended";
  EXPECT_EQ(feed(s, "\nnormal line\n"), (std::vector<Got>{{"normal line", false, (8u << 20) + 1, 1}}));
  EXPECT_EQ(s.lineStart(), (8u << 20) + 13);
}

TEST(EventDecoder, AMultiMegabyteLineIsReportedAndSkippedAndTheNextEventDecodes) {
  EventDecoderOptions options;
  options.max_line_bytes = 1u << 20;
  EventDecoder decoder(options);
  std::vector<DecodedLine> got;
  const std::string mib(1u << 20, 'x');
  for (int i = 0; i < 8; ++i) {
    for (auto& d : decoder.feed(mib)) got.push_back(std::move(d));
    EXPECT_LE(decoder.bufferedBytes(), options.max_line_bytes);
  }
  const std::string next = encodeEventLine(Event{5, 1, ControlAckEvent{3, "stop", true, "", 9}});
  for (auto& d : decoder.feed("\n" + next)) got.push_back(std::move(d));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kind, DecodedLine::Kind::kError);
  EXPECT_TRUE(got[0].too_long);
  EXPECT_EQ(got[0].error.message(),
            "events.jsonl line 1 (byte offset 0): line longer than 1048576 bytes; skipped");
  ASSERT_EQ(got[1].kind, DecodedLine::Kind::kEvent);
  EXPECT_EQ(got[1].event.seq, 5u);
  EXPECT_EQ(got[1].line, 2u);
  EXPECT_EQ(got[1].offset, (8u << 20) + 1);
  EXPECT_EQ(decoder.resumeOffset(), (8u << 20) + 1 + next.size());
}

}  // namespace
}  // namespace fs::protocol

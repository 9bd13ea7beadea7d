#include "backend/telemetry/event_sink.h"

#include <gtest/gtest.h>

#include "backend/protocol/wire/event_codec.h"
#include "tests/backend/telemetry/telemetry_test_util.h"

namespace fs::telemetry {
namespace {

using protocol::EventEncoder;
using protocol::WarningEvent;
using testing::appendRaw;
using testing::readAll;
using testing::ScratchDir;

std::string lines(std::uint64_t first, int n) {
  EventEncoder enc(first, [] { return std::int64_t{1717000000000}; });
  std::string out;
  for (int i = 0; i < n; ++i)
    out += enc.encode(WarningEvent{"test", "line " + std::to_string(i), std::nullopt});
  return out;
}

TEST(EventSinkTest, NewFileStartsAtSeqZero) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_FALSE(sink.value()->resume().existed);
  EXPECT_EQ(sink.value()->resume().next_seq, 0u);
  EXPECT_TRUE(std::filesystem::exists(path));
  ASSERT_TRUE(sink.value()->append(lines(0, 2)).isOk());
  ASSERT_TRUE(sink.value()->sync().isOk());
  EXPECT_EQ(readAll(path), lines(0, 2));
}

TEST(EventSinkTest, ExistingFileContinuesAfterLastSeq) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  appendRaw(path, lines(0, 5));
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_TRUE(sink.value()->resume().existed);
  EXPECT_EQ(sink.value()->resume().next_seq, 5u);
  EXPECT_EQ(sink.value()->resume().truncated_bytes, 0u);
}

TEST(EventSinkTest, TornLastLineIsCut) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  std::string whole = lines(0, 3);
  std::string next = lines(3, 1);
  appendRaw(path, whole + next.substr(0, next.size() / 2));  // a crash in the middle of seq 3
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_EQ(sink.value()->resume().next_seq, 3u);
  EXPECT_EQ(sink.value()->resume().truncated_bytes, next.size() / 2);
  EXPECT_EQ(sink.value()->resume().size, whole.size());
  EXPECT_EQ(readAll(path), whole);
}

TEST(EventSinkTest, OnlyAPartialLineLeavesAnEmptyFile) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  appendRaw(path, "{\"v\":\"1.0\",\"seq\":0,");
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_EQ(sink.value()->resume().next_seq, 0u);
  EXPECT_EQ(readAll(path), "");
}

TEST(EventSinkTest, GarbledAndBlankTailLinesAreSteppedOver) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  appendRaw(path, lines(0, 4) + "not json at all\n\n   \n{\"no\":\"seq\"}\n");
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_EQ(sink.value()->resume().next_seq, 4u);
}

TEST(EventSinkTest, UnknownTypeAndNewerVersionStillGiveTheirSeq) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  appendRaw(path, lines(0, 2) + "{\"v\":\"1.9\",\"seq\":2,\"t\":1,\"type\":\"from_the_future\"}\n");
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk());
  EXPECT_EQ(sink.value()->resume().next_seq, 3u);
}

TEST(EventSinkTest, LinesLongerThanTheScanChunk) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  EventEncoder enc(0, [] { return std::int64_t{1}; });
  std::string big(300000, 'x');  // several 64 KiB chunks
  std::string text = enc.encode(WarningEvent{"a", big, std::nullopt});
  text += enc.encode(WarningEvent{"b", big, std::nullopt});
  std::string torn = enc.encode(WarningEvent{"c", big, std::nullopt});
  appendRaw(path, text + torn.substr(0, 200000));
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk()) << sink.status().message();
  EXPECT_EQ(sink.value()->resume().next_seq, 2u);
  EXPECT_EQ(sink.value()->resume().truncated_bytes, 200000u);
  EXPECT_EQ(readAll(path), text);
}

TEST(EventSinkTest, ByteOrderMarkOnTheOnlyLine) {
  ScratchDir dir;
  auto path = dir.path() / "events.jsonl";
  appendRaw(path, "\xEF\xBB\xBF" + lines(0, 1));
  auto sink = FileEventSink::open(path);
  ASSERT_TRUE(sink.isOk());
  EXPECT_EQ(sink.value()->resume().next_seq, 1u);
}

TEST(EventSinkTest, DirectoryIsAnError) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path() / "events.jsonl");
  auto sink = FileEventSink::open(dir.path() / "events.jsonl");
  ASSERT_FALSE(sink.isOk());
  EXPECT_NE(sink.status().message().find("events.jsonl"), std::string::npos) << sink.status().message();
}

}  // namespace
}  // namespace fs::telemetry

// Issue 42 (Low): `remote follow` and the ack wait of `remote stop | kill | ...` read
// events.jsonl in bounded lines (NOTE [Bounded lines]): a multi-megabyte line without a
// newline holds at most the limit, is reported and skipped, and the line after it is
// read intact. The ack wait reads a real file through app::remote::LocalHost.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/remote/local_host.h"
#include "backend/protocol/wire/event_codec.h"
#include "studio/remote/control_ack.h"
#include "studio/remote/follow_lines.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {
namespace {

namespace proto = fs::protocol;

constexpr std::size_t kLimit = 1u << 20;  // 1 MiB, against an 8 MiB line

std::string ackLine(std::uint64_t seq, std::uint64_t controlSeq) {
  proto::ControlAckEvent ack;
  ack.control_seq = controlSeq;
  ack.verb = "stop";
  ack.ok = true;
  ack.step = 42;
  return proto::encodeEventLine(proto::Event{seq, 1, ack});
}

std::string finishedLine(std::uint64_t seq) {
  return proto::encodeEventLine(proto::Event{seq, 2, proto::RunFinishedEvent{}});
}

TEST(FollowLines, AMultiMegabyteLineIsBoundedReportedAndTheNextLineIsIntact) {
  std::ostringstream out, err;
  FollowLines lines({.source = "h:run/events.jsonl", .jsonl = true, .maxLineBytes = kLimit}, out, err);
  const std::string first = ackLine(0, 1);
  lines.feed(first);
  const std::string mib(1u << 20, 'x');
  for (int i = 0; i < 8; ++i) {
    lines.feed(mib);
    EXPECT_LE(lines.bufferedBytes(), kLimit);
  }
  EXPECT_EQ(lines.bufferedBytes(), 0u) << "nothing of the long line is held once it passed the limit";
  EXPECT_TRUE(lines.hasPartialLine());
  const std::string last = finishedLine(1);
  lines.feed("\n" + last);
  EXPECT_EQ(out.str(), first + last) << "the long line is not copied; the lines around it are, intact";
  EXPECT_EQ(err.str(), "h:run/events.jsonl line 2 (byte offset " + std::to_string(first.size()) +
                           "): line longer than 1048576 bytes; skipped\n");
  EXPECT_EQ(lines.skippedLines(), 1u);
  ASSERT_TRUE(lines.exitCode().has_value());
  EXPECT_EQ(*lines.exitCode(), kExitOk);
  EXPECT_FALSE(lines.hasPartialLine());
}

TEST(ControlAck, AMultiMegabyteLineIsReportedAndTheAckAfterItIsRead) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("fs_ack_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/events.jsonl";
  const std::string before = ackLine(0, 1);  // another command's ack, before the wait starts
  {
    std::ofstream f(file, std::ios::binary);
    f << before << std::string(8u << 20, 'x') << "\n" << ackLine(1, 7);
  }
  app::remote::LocalHost host;
  std::ostringstream out, err;
  const int code = awaitControlAck(host, file, before.size(), 7, "stop", 60, out, err, kLimit);
  EXPECT_EQ(code, kExitOk) << err.str();
  EXPECT_EQ(out.str(), "done: stop (seq 7) at step 42\n");
  EXPECT_EQ(err.str(), "local:" + file + " line 1 (byte offset " + std::to_string(before.size()) +
                           "): line longer than 1048576 bytes; skipped\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fs::studio::remote

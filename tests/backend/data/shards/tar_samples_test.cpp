#include "backend/data/shards/tar_samples.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tests/backend/data/shards/shard_test_util.h"

namespace fs::data {
namespace {

using testing::makeShard;
using testing::Member;
using testing::readAll;
using testing::shape;
using testing::TempDir;
using V = std::vector<std::string>;

// Hands out at most 7 bytes per read, so members and headers straddle reads.
class TrickleStream final : public ShardStream {
 public:
  explicit TrickleStream(std::unique_ptr<ShardStream> inner) : inner_(std::move(inner)) {}
  protocol::StatusOr<size_t> read(void* buf, size_t size) override {
    return inner_->read(buf, std::min<size_t>(size, 7));
  }
  void close() override { inner_->close(); }
  const std::string& url() const override { return inner_->url(); }

 private:
  std::unique_ptr<ShardStream> inner_;
};

testing::ReadResult readUrl(const std::string& url, TarReaderOptions options = {},
                            DropCounts* drops = nullptr, std::vector<std::string>* problems = nullptr) {
  auto reader = TarSampleReader::open(url, std::move(options));
  EXPECT_TRUE(reader.isOk()) << reader.status().toString();
  if (!reader.isOk()) return {};
  testing::ReadResult r = readAll(reader.value());
  if (drops) *drops = reader->drops();
  if (problems) *problems = reader->problems();
  return r;
}

std::vector<Member> basicMembers() {
  return {{"a.jpg", "JPEG-a"},    {"a.txt", "caption a"}, {"b.jpg", "JPEG-b", "file", 5000},
          {"b.txt", "caption b"}, {"b.json", "{}"},       {"c.txt", "caption c"}};
}

TEST(TarSamples, GroupsConsecutiveMembersByKey) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers());
  DropCounts drops;
  auto r = readUrl(shard, {}, &drops);
  ASSERT_TRUE(r.status.isOk()) << r.status.toString();
  EXPECT_EQ(shape(r.samples), (V{"a:jpg,txt", "b:jpg,json,txt", "c:txt"}));
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(testing::field(r.samples[0], "txt"), "caption a");
  std::string bigB;
  for (int i = 0; i < 5000; ++i) bigB += "JPEG-b";
  EXPECT_EQ(testing::field(r.samples[1], "jpg"), bigB);
  EXPECT_EQ(r.samples[2].url, shard);
  EXPECT_EQ(drops.total(), 0u) << drops.toString();
}

TEST(TarSamples, KeyAndExtensionRules) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar",
                                {{"dir/a.b.JPG", "1"},
                                 {"dir/a.TXT", "2"},  // one sample, lowercased exts
                                 {"x.txt", "3"},
                                 {"x.txt", "4"},        // repeated ext: two samples
                                 {"__key__.txt", "k"},  // an ordinary member, as webdataset reads it
                                 {"__meta__", "m"},     // metadata: skipped, not counted
                                 {"d/__meta__", "m"},   // no extension
                                 {"y.jpg", "5"},
                                 {"z.jpg", "6"},
                                 {"y.txt", "7"},  // not consecutive: three samples
                                 {"noext", "8"},
                                 {".hidden", "9"},
                                 {"trail.", "10"}});  // the empty extension
  DropCounts drops;
  auto r = readUrl(shard, {}, &drops);
  EXPECT_EQ(shape(r.samples),
            (V{"dir/a:b.jpg,txt", "x:txt", "x:txt", "__key__:txt", "y:jpg", "z:jpg", "y:txt", "trail:"}));
  ASSERT_EQ(r.samples.size(), 8u);
  EXPECT_EQ(testing::field(r.samples[1], "txt"), "3");
  EXPECT_EQ(testing::field(r.samples[2], "txt"), "4");
  EXPECT_EQ(drops[DropReason::kNoExtension], 3u);
  EXPECT_EQ(drops.total(), 3u) << drops.toString();
}

TEST(TarSamples, GnuLongNamesUstarPrefixAndPaxUnicode) {
  TempDir dir;
  std::string longDir(120, 'd');
  std::string ustarDir = std::string(80, 'u') + "/" + std::string(60, 'v');  // fits ustar's prefix + name
  std::vector<Member> long_ = {
      {longDir + "/k.jpg", "L1"}, {longDir + "/k.txt", "L2"}, {"ünï/ç.txt", "raw UTF-8"}};
  auto gnu = readUrl(makeShard(dir, "gnu.tar", long_, "gnu"));
  EXPECT_EQ(shape(gnu.samples), (V{longDir + "/k:jpg,txt", "ünï/ç:txt"}));
  auto ustar = readUrl(makeShard(dir, "ustar.tar", {{ustarDir + "/k.jpg", "U"}}, "ustar"));
  EXPECT_EQ(shape(ustar.samples), (V{ustarDir + "/k:jpg"}));
  std::string uni = "données/ünïcødé_名前";
  auto pax = readUrl(makeShard(
      dir, "pax.tar", {{uni + ".JPG", "P1"}, {uni + ".txt", "P2"}, {longDir + "/q.txt", "P3"}}, "pax"));
  EXPECT_EQ(shape(pax.samples), (V{uni + ":jpg,txt", longDir + "/q:txt"}));
}

TEST(TarSamples, MemberSplitAcrossSevenByteReads) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers(), "pax");
  auto whole = readUrl(shard);
  auto stream = openShardStream(shard);
  ASSERT_TRUE(stream.isOk());
  auto reader = TarSampleReader::fromStream(std::make_unique<TrickleStream>(std::move(stream).value()));
  auto trickled = readAll(reader);
  ASSERT_TRUE(trickled.status.isOk());
  ASSERT_EQ(shape(trickled.samples), shape(whole.samples));
  for (size_t i = 0; i < whole.samples.size(); ++i)
    EXPECT_EQ(trickled.samples[i].fields, whole.samples[i].fields);
}

TEST(TarSamples, TruncatedOrDamagedArchiveKeepsEarlierSamplesAndCounts) {
  TempDir dir;
  struct Case {
    std::string name, extra;
    V expected;
  };
  std::vector<Case> cases = {
      {"mid_data", R"("truncate": {"member": "b.json", "at": "data", "plus": 1})", {"a:jpg,txt"}},
      {"mid_header", R"("truncate": {"member": "c.txt", "at": "header", "plus": 100})", {"a:jpg,txt"}},
      {"first_data", R"("truncate": {"member": "a.jpg", "at": "data", "plus": 3})", {}},
      {"garbled", R"("garble": "c.txt")", {"a:jpg,txt"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> problems;
    DropCounts drops;
    std::vector<std::string> seen;
    TarReaderOptions options;
    options.onProblem = [&](const std::string& m) { seen.push_back(m); };
    std::string shard = makeShard(dir, c.name + ".tar", basicMembers(), "ustar", c.extra);
    auto r = readUrl(shard, options, &drops, &problems);
    EXPECT_TRUE(r.status.isOk()) << r.status.toString();
    EXPECT_EQ(shape(r.samples), c.expected);
    EXPECT_EQ(drops[DropReason::kCorruptTar], 1u) << drops.toString();
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(seen, problems);
    EXPECT_NE(problems[0].find(shard), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find("corrupt_tar"), std::string::npos) << problems[0];
  }
}

TEST(TarSamples, EmptyFileAndEndBlocksOnly) {
  TempDir dir;
  std::string empty = dir / "empty.tar";
  std::ofstream(empty).close();
  DropCounts drops;
  auto r = readUrl(empty, {}, &drops);
  EXPECT_TRUE(r.status.isOk());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(drops[DropReason::kEmptyShard], 1u);
  EXPECT_EQ(drops.total(), 1u);

  auto endOnly = readUrl(makeShard(dir, "end.tar", {}), {}, &drops);
  EXPECT_TRUE(endOnly.status.isOk());
  EXPECT_TRUE(endOnly.samples.empty());
  EXPECT_EQ(drops.total(), 0u) << drops.toString();
}

TEST(TarSamples, NonRegularMembersAreSkippedAndCounted) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar",
                                {{"a.jpg", "J"},
                                 {"a", "", "dir"},
                                 {"a.lnk", "", "symlink", 1, "a.jpg"},
                                 {"a.hard", "", "hardlink", 1, "a.jpg"},
                                 {"a.fifo", "", "fifo"},
                                 {"a.dev", "", "chr"},
                                 {"a.txt", "T"}});
  DropCounts drops;
  auto r = readUrl(shard, {}, &drops);
  EXPECT_EQ(shape(r.samples), (V{"a:jpg,txt"}));
  EXPECT_EQ(drops[DropReason::kNonRegular], 5u);
  EXPECT_EQ(drops.total(), 5u) << drops.toString();
}

std::vector<std::string> listing(const std::filesystem::path& p) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(p)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TarSamples, UnsafeNamesDropTheirSampleAndTouchNoFiles) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar",
                                {{"good.txt", "ok"},
                                 {"../evil.txt", "x"},
                                 {"../evil.jpg", "x"},
                                 {"/abs/evil.txt", "x"},
                                 {"ok/../../evil.txt", "x"},
                                 {"fine.txt", "ok"}});
  std::filesystem::create_directory(dir.path() / "cwd");
  auto oldCwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path() / "cwd");
  auto before = listing(dir.path());
  DropCounts drops;
  std::vector<std::string> problems;
  auto r = readUrl(shard, {}, &drops, &problems);
  auto after = listing(dir.path());
  std::filesystem::current_path(oldCwd);
  EXPECT_EQ(shape(r.samples), (V{"good:txt", "fine:txt"}));
  EXPECT_EQ(drops[DropReason::kUnsafeName], 4u) << drops.toString();
  EXPECT_EQ(problems.size(), 4u);
  EXPECT_EQ(before, after);
  EXPECT_FALSE(std::filesystem::exists("/abs/evil.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir.path().parent_path() / "evil.txt"));
}

TEST(TarSamples, TooLargeMemberIsDroppedSampleKept) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", {{"a.jpg", "0123456789", "file", 100}, {"a.txt", "small"}});
  TarReaderOptions options;
  options.maxMemberBytes = 999;
  DropCounts drops;
  std::vector<std::string> problems;
  auto r = readUrl(shard, options, &drops, &problems);
  EXPECT_EQ(shape(r.samples), (V{"a:txt"}));
  EXPECT_EQ(drops[DropReason::kTooLarge], 1u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a.jpg"), std::string::npos) << problems[0];
}

TEST(TarSamples, SampleOverItsTotalLimitDropsTheMemberThatPassesIt) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar",
                                {{"a.jpg", std::string(600, 'j')},
                                 {"a.txt", std::string(300, 't')},
                                 {"a.json", std::string(200, 'x')},
                                 {"b.jpg", std::string(600, 'j')},
                                 {"b.txt", std::string(300, 't')}});
  TarReaderOptions options;
  options.maxSampleBytes = 1000;
  DropCounts drops;
  std::vector<std::string> problems;
  auto r = readUrl(shard, options, &drops, &problems);
  // a.json would bring sample a to 1100 bytes; sample b starts the count again.
  EXPECT_EQ(shape(r.samples), (V{"a:jpg,txt", "b:jpg,txt"}));
  EXPECT_EQ(drops[DropReason::kTooLarge], 1u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("a.json"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("maxSampleBytes"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("1000"), std::string::npos) << problems[0];
}

TEST(TarSamples, ProblemMessagesAreBounded) {
  TempDir dir;
  std::vector<Member> members;
  for (int i = 0; i < 10; ++i) members.push_back({"/abs/" + std::to_string(i) + ".txt", "x"});
  TarReaderOptions options;
  options.maxProblemMessages = 3;
  auto reader = TarSampleReader::open(makeShard(dir, "s.tar", members), options);
  ASSERT_TRUE(reader.isOk());
  EXPECT_TRUE(readAll(reader.value()).samples.empty());
  EXPECT_EQ(reader->problems().size(), 3u);
  EXPECT_EQ(reader->problemsNotKept(), 7u);
  EXPECT_EQ(reader->drops()[DropReason::kUnsafeName], 10u);
}

TEST(TarSamples, PipeReadsTheSameSamplesAsTheFile) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers());
  auto file = readUrl(shard);
  auto pipe = readUrl("pipe:cat '" + shard + "'");
  ASSERT_TRUE(pipe.status.isOk()) << pipe.status.toString();
  EXPECT_EQ(shape(pipe.samples), shape(file.samples));
  for (size_t i = 0; i < file.samples.size() && i < pipe.samples.size(); ++i)
    EXPECT_EQ(pipe.samples[i].fields, file.samples[i].fields);
  EXPECT_EQ(pipe.samples.at(0).url, "pipe:cat '" + shard + "'");
}

TEST(TarSamples, GzipShard) {
  TempDir dir;
  auto r = readUrl(makeShard(dir, "s.tar.gz", basicMembers(), "ustar", R"("gzip": true)"));
  EXPECT_EQ(shape(r.samples), (V{"a:jpg,txt", "b:jpg,json,txt", "c:txt"}));
}

bool noChildren() {
  int status;
  return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

TEST(TarSamples, CommandStillRunningAfterTheTarEndsIsStopped) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers());
  auto reader = TarSampleReader::open("pipe:cat '" + shard + "'; sleep 1000");
  ASSERT_TRUE(reader.isOk());
  auto r = readAll(reader.value());
  EXPECT_TRUE(r.status.isOk()) << r.status.toString();
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_TRUE(noChildren());  // stopped at the end of the tar, not at destruction
}

TEST(TarSamples, DestroyingAReaderEarlyStopsItsCommand) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers());
  {
    auto reader = TarSampleReader::open("pipe:cat '" + shard + "'; sleep 1000");
    ASSERT_TRUE(reader.isOk());
    ASSERT_TRUE(reader->next().value().has_value());
  }
  EXPECT_TRUE(noChildren());
  auto zeros = TarSampleReader::open("pipe:cat /dev/zero");  // zero blocks: a valid, empty tar
  ASSERT_TRUE(zeros.isOk());
  EXPECT_FALSE(zeros->next().value().has_value());
  EXPECT_EQ(zeros->drops().total(), 0u);
  EXPECT_TRUE(noChildren());
}

TEST(TarSamples, FailingPipeCommandIsAnErrorNamingIt) {
  auto r = readUrl("pipe:cat /nonexistent/shard.tar");
  EXPECT_FALSE(r.status.isOk());
  EXPECT_NE(r.status.message().find("cat /nonexistent/shard.tar"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("No such file"), std::string::npos) << r.status.message();
  auto f = readUrl("pipe:false");
  EXPECT_FALSE(f.status.isOk());
  EXPECT_NE(f.status.message().find("'false'"), std::string::npos) << f.status.message();
}

TEST(TarSamples, CommandCutOffMidShardIsAnErrorAfterEarlierSamples) {
  TempDir dir;
  std::string shard = makeShard(dir, "s.tar", basicMembers());
  auto reader = TarSampleReader::open("pipe:head -c 3000 '" + shard + "'; echo lost >&2; exit 3");
  ASSERT_TRUE(reader.isOk());
  auto r = readAll(reader.value());
  EXPECT_EQ(shape(r.samples), (V{"a:jpg,txt"}));
  EXPECT_FALSE(r.status.isOk());
  EXPECT_NE(r.status.message().find("lost"), std::string::npos) << r.status.message();
  EXPECT_EQ(reader->drops()[DropReason::kCorruptTar], 0u);  // reported once, as the error
  EXPECT_FALSE(reader->next().value().has_value());
}

TEST(TarSamples, NotATarIsCorrupt) {
  TempDir dir;
  std::string junk = dir / "junk.tar";
  std::ofstream(junk) << std::string(3000, 'j');
  DropCounts drops;
  auto r = readUrl(junk, {}, &drops);
  EXPECT_TRUE(r.status.isOk());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(drops[DropReason::kCorruptTar], 1u);
}

TEST(TarSamples, OpenErrors) {
  EXPECT_FALSE(TarSampleReader::open("/nonexistent/x.tar").isOk());
  EXPECT_FALSE(TarSampleReader::open("pipe:  ").isOk());
}

}  // namespace
}  // namespace fs::data

#include "backend/protocol/config/pipe_commands.h"

#include <gtest/gtest.h>

#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

using V = std::vector<std::string>;

RunConfig withShards(const std::string& shards, const std::string& valShards = "") {
  RunConfig c = defaultRunConfig();
  c.data.datasets.resize(2);
  c.data.datasets[0].shards = "/data/laion/{00000..00009}.tar";
  c.data.datasets[1].shards = shards;
  c.data.datasets[1].val_shards = valShards;
  return c;
}

TEST(PipeShards, CountsPipesAfterExpansionWithoutExpanding) {
  EXPECT_EQ(countPipeShards("/d/{0..9}.tar").value(), 0u);
  EXPECT_EQ(countPipeShards("pipe:cat /d/{0..9}.tar").value(), 10u);
  EXPECT_EQ(countPipeShards("{a.tar,pipe:x,b.tar}").value(), 1u);
  EXPECT_EQ(countPipeShards("pi{pe,g}:x").value(), 1u);
  EXPECT_EQ(countPipeShards("{pi,x}{p,q}e:{1..3}").value(), 3u);
  EXPECT_EQ(countPipeShards("pip{0..9}:x").value(), 0u);  // digits never spell "pipe:"
  EXPECT_EQ(countPipeShards("pipe:aws s3 cp s3://b/{00000..41455}.tar -").value(), 41456u);
  EXPECT_EQ(countPipeShards("pipe:{0..99999}/{0..99999}").value(), 10'000'000'000ull);
  EXPECT_EQ(countPipeShards("pipe:cp s3://{a,b}:{1..2} -").value(), 4u);  // ':' after the prefix
  EXPECT_EQ(countPipeShards(" pipe:x").value(), 0u);  // not a pipe to the shard reader either
  EXPECT_FALSE(countPipeShards("pipe:{x").isOk());
}

TEST(PipeSources, FindsPipesInListsAlternativesAndValShards) {
  const auto sources = pipeSources(
      withShards("/d/a.tar::pipe:curl -s http://h/x.tar::{b.tar,pipe:rm -rf ~}", "pipe:cat /v/{0..1}.tar"));
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[0], (PipeSource{"data.datasets[1].shards", "pipe:curl -s http://h/x.tar", 1,
                                    V{"curl -s http://h/x.tar"}}));
  EXPECT_EQ(sources[1], (PipeSource{"data.datasets[1].shards", "{b.tar,pipe:rm -rf ~}", 1, V{"rm -rf ~"}}));
  EXPECT_EQ(sources[2], (PipeSource{"data.datasets[1].val_shards", "pipe:cat /v/{0..1}.tar", 2,
                                    V{"cat /v/0.tar", "cat /v/1.tar"}}));
  EXPECT_EQ(pipeSourceTexts(withShards("pipe:x::pipe:x", "pipe:x")), V{"pipe:x"});
  EXPECT_EQ(pipeSourcesOfSpec("a.tar::pipe:x::{b,pipe:y}"), (V{"pipe:x", "{b,pipe:y}"}));
  EXPECT_TRUE(pipeSourcesOfSpec("").empty());
}

TEST(PipeSources, NoneForPlainShardsAndEmptyFields) {
  EXPECT_TRUE(pipeSources(withShards("/d/{0..3}.tar", "")).empty());
  EXPECT_TRUE(pipeSources(defaultRunConfig()).empty());
}

TEST(PipeSources, ListsWhatTheShellRunsAndCapsTheList) {
  // Listed as brace expansion leaves them (NOTE [braceexpand grammar]): a
  // group without a comma is literal text, a list is expanded, a backslash dropped.
  auto s = pipeSources(withShards("pipe:echo ${HOME} {a,b}\\,c"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].commands, (V{"echo ${HOME} a,c", "echo ${HOME} b,c"}));
  s = pipeSources(withShards("pipe:aws s3 cp s3://b/{00000..41455}.tar -"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].commandCount, 41456u);
  ASSERT_EQ(s[0].commands.size(), kMaxListedCommands);
  EXPECT_EQ(s[0].commands[0], "aws s3 cp s3://b/00000.tar -");
  const std::string text = describePipeSources(s);
  EXPECT_NE(text.find("data.datasets[1].shards: pipe:aws s3 cp s3://b/{00000..41455}.tar -"),
            std::string::npos);
  EXPECT_NE(text.find("... and 41356 more"), std::string::npos);
}

// One refusal text for both command lines: the program, where the config came from, every source, the flag.
TEST(PipeSources, TheRefusalNamesProgramConfigSourcesAndTheFlag) {
  const auto s = pipeSources(withShards("pipe:cat a.tar"));
  const std::string text = pipeRefusal("flamingo-train train", "run.yaml", s);
  EXPECT_EQ(text.rfind("flamingo-train train: the config (run.yaml with any --set) runs shell commands", 0),
            0u)
      << text;
  EXPECT_NE(text.find(describePipeSources(s)), std::string::npos) << text;
  EXPECT_NE(text.find("refused without --allow-pipe"), std::string::npos) << text;
  EXPECT_NE(text.find("run again with --allow-pipe"), std::string::npos) << text;
}

TEST(PipeSources, HugePatternsAreCountedAndListedFromTheirStart) {
  auto s = pipeSources(withShards("pipe:cat /{0..99999}/{0..99999}.tar"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].commandCount, 10'000'000'000ull);
  ASSERT_EQ(s[0].commands.size(), kMaxListedCommands);
  EXPECT_EQ(s[0].commands[1], "cat /0/1.tar");
  // The pipe comes after a million plain shards: counted, not listed.
  s = pipeSources(withShards("{/d/{0..999999}.tar,pipe:cat x}"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].commandCount, 1u);
  EXPECT_TRUE(s[0].commands.empty());
  EXPECT_NE(describePipeSources(s).find("the source above names them all"), std::string::npos);
  EXPECT_TRUE(hasPipeSources(withShards("{/d/{0..999999}.tar,pipe:cat x}")));
  EXPECT_FALSE(hasPipeSources(withShards("/d/{0..999999}.tar")));
  EXPECT_TRUE(hasPipeSources(withShards("/d/a.tar", "pipe:{broken")));
}

TEST(PipeSources, UnparseablePartWithAPipeIsStillListed) {
  const auto s = pipeSources(withShards("a.tar::pipe:cat {x"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].source, "pipe:cat {x");
  EXPECT_EQ(s[0].commandCount, 0u);
  EXPECT_NE(describePipeSources(s).find("does not parse"), std::string::npos);
}

}  // namespace
}  // namespace fs::protocol

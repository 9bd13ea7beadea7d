// Issue 26 item 5: the OpenFlamingo import quotes the s3 lists it turns into
// pipe: commands. Each resulting command is run through /bin/sh with `aws`
// replaced by a script that writes its argv (PATH first), proving the list
// arrives as one literal argument and nothing else runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/pipe_commands.h"
#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

namespace fsys = std::filesystem;
using Words = std::vector<std::string>;

class S3Quoting : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fs-s3-quote-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    canary_ = dir_ / "CANARY";
    const fsys::path bin = dir_ / "bin";
    fsys::create_directory(bin);
    std::ofstream aws(bin / "aws");
    aws << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\000' \"$a\"; done\n";
    aws.close();
    fsys::permissions(bin / "aws", fsys::perms::owner_all);
    // The real tools stay on PATH, so an injected `touch` would work.
    path_ = "PATH=" + bin.string() + ":/usr/bin:/bin";
  }
  void TearDown() override { fsys::remove_all(dir_); }

  // argv the fake aws got when /bin/sh -c runs `command` (as shard_stream.cpp does).
  Words runShell(const std::string& command) {
    int out[2];
    EXPECT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      ::chdir(dir_.c_str());
      const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
      const char* envp[] = {path_.c_str(), nullptr};
      ::execve("/bin/sh", const_cast<char**>(argv), const_cast<char**>(envp));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string bytes;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) bytes.append(buf, static_cast<size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
    Words args;
    for (size_t start = 0, nul; (nul = bytes.find('\0', start)) != std::string::npos; start = nul + 1)
      args.push_back(bytes.substr(start, nul - start));
    return args;
  }

  fsys::path dir_, canary_;
  std::string path_;
};

std::string importedShards(const std::string& list) {
  const CmdlineImport im = importOpenFlamingoCmdline(joinShellWords({"train.py", "--laion_shards", list}));
  return im.config.data.datasets.at(0).shards;
}

TEST_F(S3Quoting, HostileListsArriveAsOneArgumentAndRunNothingElse) {
  const std::string c = canary_.string();
  const Words hostile = {
      "s3://b/with space.tar",
      "s3://b/it's.tar",
      "s3://b/x;touch " + c,
      "s3://b/$(touch " + c + ")",
      "s3://b/`touch " + c + "`",
      "s3://b/x' ; touch " + c + " ; echo '",
      "s3://b/\"q\" $HOME * ~ \\ | & > " + c,
      "s3://b/line\nbreak && touch " + c,
  };
  for (const auto& list : hostile) {
    const std::string shards = importedShards(list);
    auto urls = expandShards(shards);
    ASSERT_TRUE(urls.isOk()) << list << " -> " << shards << ": " << urls.status().message();
    ASSERT_EQ(urls->size(), 1u) << shards;
    ASSERT_TRUE(urls->front().starts_with("pipe:")) << shards;
    EXPECT_EQ(runShell(urls->front().substr(5)), (Words{"s3", "cp", list, "-"})) << shards;
    EXPECT_FALSE(fsys::exists(canary_)) << "ran more than aws for " << list;
  }
}

TEST_F(S3Quoting, BracePatternsStillExpandInsideTheQuotes) {
  const std::string shards = importedShards("s3://b/my laion/{000..002}.tar");
  EXPECT_EQ(shards, "pipe:aws s3 cp 's3://b/my laion/{000..002}.tar' -");
  auto urls = expandShards(shards);
  ASSERT_TRUE(urls.isOk());
  ASSERT_EQ(urls->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(runShell(urls->at(i).substr(5)),
              (Words{"s3", "cp", "s3://b/my laion/00" + std::to_string(i) + ".tar", "-"}));
  }
  // A quote inside an alternative: each expansion is still one quoted word.
  urls = expandShards(importedShards("s3://b/{it's,x}.tar"));
  ASSERT_TRUE(urls.isOk());
  EXPECT_EQ(runShell(urls->at(0).substr(5)), (Words{"s3", "cp", "s3://b/it's.tar", "-"}));
  EXPECT_EQ(runShell(urls->at(1).substr(5)), (Words{"s3", "cp", "s3://b/x.tar", "-"}));
}

TEST_F(S3Quoting, EachListPartIsItsOwnAwsCommand) {
  // Without the split, "::pipe:..." would become a pipe of its own.
  const std::string shards = importedShards("s3://b/a.tar::pipe:touch " + canary_.string());
  const auto sources = pipeSources([&] {
    RunConfig c = importOpenFlamingoCmdline(joinShellWords({"train.py", "--laion_shards", "x"})).config;
    c.data.datasets.at(0).shards = shards;
    return c;
  }());
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_EQ(runShell(sources[0].commands.at(0)), (Words{"s3", "cp", "s3://b/a.tar", "-"}));
  EXPECT_EQ(runShell(sources[1].commands.at(0)), (Words{"s3", "cp", "pipe:touch " + canary_.string(), "-"}));
  EXPECT_FALSE(fsys::exists(canary_));
}

}  // namespace
}  // namespace fs::protocol

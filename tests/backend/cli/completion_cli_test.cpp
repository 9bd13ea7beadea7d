// `flamingo-train completion bash` through the real binary: the script is
// sourced in bash --norc (no bash-completion package), COMP_WORDS/COMP_CWORD
// are set as bash sets them, and COMPREPLY is compared with what the same
// binary's --help lists: commands, tools, options, files, directories, words.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/backend/cli/cli_test_util.h"

namespace {

namespace fsys = std::filesystem;

using fs::cli::testing::Result;
using fs::cli::testing::slurp;

std::set<std::string> lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.insert(line);
  return out;
}

// "  --config FILE ..." lines of a --help text: "--config".
std::set<std::string> helpOptions(const std::string& text) {
  std::set<std::string> names;
  for (const auto& n : fs::cli::testing::helpOptionNames(text)) names.insert("--" + n);
  return names;
}

// The names in a command or tool list: "  name   summary" lines after `header`.
std::set<std::string> listedNames(const std::string& text, const std::string& header) {
  std::set<std::string> names;
  std::istringstream in(text);
  bool inList = header.empty();
  for (std::string line; std::getline(in, line);) {
    if (!inList) {
      inList = line == header;
      continue;
    }
    if (line.empty()) {
      if (!names.empty()) break;
      continue;
    }
    std::smatch m;
    static const std::regex kEntry(R"(^  ([a-z0-9-]+)  )");
    if (std::regex_search(line, m, kEntry)) names.insert(m[1]);
  }
  return names;
}

class Completion : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fsys::temp_directory_path() / ("fs_completion_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fsys::remove_all(dir_);
    fsys::create_directories(dir_ / "work" / "runs");
    std::ofstream(dir_ / "work" / "run.yaml") << "name: x\n";
    std::ofstream(dir_ / "work" / "notes.txt") << "x\n";
    Result r = cli("completion bash");
    ASSERT_EQ(r.code, 0) << r.err;
    script_ = dir_ / "flamingo-train.bash";
    std::ofstream(script_) << r.out;
  }
  void TearDown() override { fsys::remove_all(dir_); }

  Result sh(const std::string& cmd, const fsys::path& cwd) {
    return fs::cli::testing::runShell(cmd, cwd, dir_);
  }
  Result cli(const std::string& args) { return sh(bin() + " " + args, dir_); }
  static std::string bin() { return "'" + std::string(FS_BINARY_DIR) + "/bin/flamingo-train'"; }

  // COMPREPLY for the command line `words` with the cursor on the last word, in `work/`.
  std::set<std::string> complete(const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) array += " '" + w + "'";
    const fsys::path driver = dir_ / "driver.sh";
    std::ofstream(driver) << "source '" << script_.string() << "'\n"
                          << "COMP_WORDS=(" << array << " )\n"
                          << "COMP_CWORD=" << words.size() - 1 << "\n"
                          << "COMP_LINE=\"${COMP_WORDS[*]}\"\n"
                          << "_flamingo_train\n"
                          << "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    Result r = sh("bash --norc --noprofile '" + driver.string() + "'", dir_ / "work");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return lines(r.out);
  }

  fsys::path dir_, script_;
};

using Set = std::set<std::string>;

TEST_F(Completion, BuildWroteTheSameScriptAndItRegistersTheFunction) {
  const fsys::path built =
      fsys::path(FS_BINARY_DIR) / "share" / "bash-completion" / "completions" / "flamingo-train";
  ASSERT_TRUE(fsys::exists(built)) << built;
  EXPECT_EQ(slurp(built), slurp(script_));
  Result r = sh(
      "bash --norc --noprofile -c \"source '" + script_.string() + "'; complete -p flamingo-train\"", dir_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("complete -F _flamingo_train flamingo-train"), std::string::npos) << r.out;
}

TEST_F(Completion, CommandsAreTheOnesHelpLists) {
  Result help = cli("--help");
  ASSERT_EQ(help.code, 0);
  const Set commands = listedNames(help.out, "commands:");
  ASSERT_GE(commands.size(), 10u) << help.out;
  EXPECT_EQ(complete({"flamingo-train", ""}), commands);
  EXPECT_EQ(complete({"flamingo-train", "ch"}), (Set{"checkpoint"}));
}

TEST_F(Completion, ToolsAfterCheckpoint) {
  Result help = cli("checkpoint --help");
  ASSERT_EQ(help.code, 0);
  const Set tools = listedNames(help.out, "usage: flamingo-train checkpoint <tool> [options]");
  ASSERT_TRUE(tools.count("inspect") && tools.count("diff")) << help.out;
  EXPECT_EQ(complete({"flamingo-train", "checkpoint", ""}), tools);
  EXPECT_EQ(complete({"flamingo-train", "checkpoint", "d"}), (Set{"diff"}));
}

#ifdef FS_TEST_SHARD_TOOLS
TEST_F(Completion, ShardToolsAndTheirEnumeratedType) {
  Result help = cli("shards --help");
  ASSERT_EQ(help.code, 0);
  const Set tools = listedNames(help.out, "usage: flamingo-train shards <tool> [options]");
  ASSERT_EQ(tools, (Set{"make-synthetic", "inspect", "validate", "convert-mmc4"})) << help.out;
  EXPECT_EQ(complete({"flamingo-train", "shards", ""}), tools);
  EXPECT_EQ(complete({"flamingo-train", "shards", "inspect", "--type", ""}), (Set{"laion", "mmc4"}));
  EXPECT_EQ(complete({"flamingo-train", "shards", "convert-mmc4", "--images", ""}), (Set{"runs"}));
  EXPECT_EQ(complete({"flamingo-train", "shards", "convert-mmc4", "--documents", "n"}), (Set{"notes.txt"}));
}
#endif

TEST_F(Completion, OptionsAreExactlyTheOnesHelpLists) {
#ifdef FS_TEST_ENGINE
  const std::vector<std::vector<std::string>> commands = {
      {"train"}, {"plan"}, {"launch"}, {"checkpoint", "inspect"}, {"checkpoint", "consolidate"}, {"version"}};
#else
  const std::vector<std::vector<std::string>> commands = {
      {"plan"}, {"launch"}, {"checkpoint", "inspect"}, {"version"}};
#endif
  for (const auto& c : commands) {
    std::string joined;
    for (const auto& w : c) joined += (joined.empty() ? "" : " ") + w;
    SCOPED_TRACE(joined);
    Result help = cli(joined + " --help");
    ASSERT_EQ(help.code, 0) << help.err;
    const Set listed = helpOptions(help.out);
    ASSERT_FALSE(listed.empty()) << help.out;
    std::vector<std::string> words = {"flamingo-train"};
    words.insert(words.end(), c.begin(), c.end());
    words.push_back("--");
    EXPECT_EQ(complete(words), listed);
  }
  EXPECT_EQ(complete({"flamingo-train", "checkpoint", "inspect", "--ve"}), (Set{"--verify"}));
}

TEST_F(Completion, FilesForFileOptionsDirectoriesForDirOptions) {
#ifdef FS_TEST_ENGINE
  const std::string command = "train";
#else
  const std::string command = "plan";
#endif
  EXPECT_EQ(complete({"flamingo-train", command, "--config", ""}), (Set{"notes.txt", "run.yaml", "runs"}));
  EXPECT_EQ(complete({"flamingo-train", command, "--config", "ru"}), (Set{"run.yaml", "runs"}));
  // --config=ru: bash splits the word at '='.
  EXPECT_EQ(complete({"flamingo-train", command, "--config", "=", "ru"}), (Set{"run.yaml", "runs"}));
  EXPECT_EQ(complete({"flamingo-train", "launch", "--run-dir", ""}), (Set{"runs"}));
  // A value that is not a path completes to nothing, not to file names.
  EXPECT_EQ(complete({"flamingo-train", "launch", "--nnodes", ""}), Set{});
  // Positionals are files.
  EXPECT_EQ(complete({"flamingo-train", "checkpoint", "inspect", "n"}), (Set{"notes.txt"}));
}

TEST_F(Completion, LaunchCompletesTheCommandAfterDoubleDash) {
  Result help = cli("--help");
  ASSERT_EQ(help.code, 0);
  EXPECT_EQ(complete({"flamingo-train", "launch", "--nproc-per-node", "2", "--", ""}),
            listedNames(help.out, "commands:"));
  EXPECT_EQ(complete({"flamingo-train", "launch", "--", "plan", "--config", "ru"}),
            (Set{"run.yaml", "runs"}));
  EXPECT_EQ(complete({"flamingo-train", "launch", "--", "flamingo-train", "plan", "--dev"}),
            (Set{"--device"}));
  // Before "--", launch's own options.
  EXPECT_EQ(complete({"flamingo-train", "launch", "--nproc"}), (Set{"--nproc-per-node"}));
}

TEST_F(Completion, EnumeratedValues) {
  EXPECT_EQ(complete({"flamingo-train", "plan", "--device", ""}), (Set{"cpu", "cuda"}));
  EXPECT_EQ(complete({"flamingo-train", "plan", "--device", "cu"}), (Set{"cuda"}));
}

TEST_F(Completion, OnlyBashIsSupported) {
  Result r = cli("completion zsh");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unsupported shell 'zsh' (bash only)"), std::string::npos) << r.err;
}

}  // namespace

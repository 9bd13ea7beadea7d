#include "backend/protocol/cmdline/shell_words.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace fs::protocol {
namespace {

using Words = std::vector<std::string>;

Words split(const std::string& line) {
  auto r = splitShellWords(line);
  EXPECT_TRUE(r.isOk()) << line << ": " << r.status().message();
  return r.isOk() ? r.value() : Words{};
}

std::string splitError(const std::string& line) {
  auto r = splitShellWords(line);
  EXPECT_FALSE(r.isOk()) << line;
  return r.isOk() ? "" : r.status().message();
}

TEST(SplitShellWords, WhitespaceRunsAndNewlinesSeparateWords) {
  EXPECT_EQ(split("a b\t\tc\n\n d  "), (Words{"a", "b", "c", "d"}));
  EXPECT_EQ(split(""), Words{});
  EXPECT_EQ(split(" \n\t "), Words{});
}

TEST(SplitShellWords, SingleQuotesKeepEverything) {
  EXPECT_EQ(split(R"('a b' 'x\y"$z' 'it'\''s')"), (Words{"a b", R"(x\y"$z)", "it's"}));
  EXPECT_EQ(split("'line\nbreak'"), (Words{"line\nbreak"}));
}

TEST(SplitShellWords, DoubleQuotesEscapeOnlyDollarBackquoteQuoteBackslashNewline) {
  EXPECT_EQ(split(R"("a\$b\`c\"d\\e\f")"), (Words{R"(a$b`c"d\e\f)"}));
  EXPECT_EQ(split("\"ab\\\ncd\""), (Words{"abcd"}));
  EXPECT_EQ(split(R"("it's" "")"), (Words{"it's", ""}));
}

TEST(SplitShellWords, BackslashOutsideQuotes) {
  EXPECT_EQ(split(R"(a\ b \'c \\ \")"), (Words{"a b", "'c", "\\", "\""}));
  EXPECT_EQ(split("abc\\\ndef"), (Words{"abcdef"}));  // continuation joins, as in sh
}

TEST(SplitShellWords, ReadmeContinuationWithoutSpaceBeforeBackslash) {
  const std::string line =
      "  --train_num_samples_mmc4 125000\\\n"
      "  --train_num_samples_laion 250000 \\\n"
      "  --workers=4";
  EXPECT_EQ(split(line), (Words{"--train_num_samples_mmc4", "125000", "--train_num_samples_laion", "250000",
                                "--workers=4"}));
}

TEST(SplitShellWords, QuotesConcatenateWithinAWord) {
  EXPECT_EQ(split(R"(--name="a b"'c d'e)"), (Words{"--name=a bc de"}));
  EXPECT_EQ(split("a'' ''b ''"), (Words{"a", "b", ""}));
}

TEST(SplitShellWords, CommentsOnlyAtWordStart) {
  EXPECT_EQ(split("a # comment 'unbalanced\nb#c '#d' \\#e"), (Words{"a", "b#c", "#d", "#e"}));
  EXPECT_EQ(split("# only a comment"), Words{});
}

TEST(SplitShellWords, NoExpansion) {
  EXPECT_EQ(split("$HOME ${X:-a b} $(date +%s) `echo hi` *.tar {0..9} ~/x run-$(date +%F)_x"),
            (Words{"$HOME", "${X:-a b}", "$(date +%s)", "`echo hi`", "*.tar", "{0..9}", "~/x",
                   "run-$(date +%F)_x"}));
  EXPECT_EQ(split(R"x("$(echo "a b")" "${A}")x"), (Words{R"x($(echo "a b"))x", "${A}"}));
}

TEST(SplitShellWords, WindowsLineEndingsAndTrailingBackslash) {
  EXPECT_EQ(split("a \\\r\n  b\r\nc\r\n"), (Words{"a", "b", "c"}));
  EXPECT_EQ(split("a --report_to_wandb \\"), (Words{"a", "--report_to_wandb"}));
}

TEST(SplitShellWords, UnterminatedQuotesNameTheColumn) {
  EXPECT_NE(splitError("abc 'def").find("single quote (') opened at column 5"), std::string::npos);
  EXPECT_NE(splitError("a \"b").find("double quote (\") opened at column 3"), std::string::npos);
  EXPECT_NE(splitError("x \\\n  --y 'z").find("line 2, column 7"), std::string::npos);
  EXPECT_NE(splitError("a $(b").find("column 3"), std::string::npos);
  EXPECT_NE(splitError("a `b").find("column 3"), std::string::npos);
}

TEST(SplitShellWords, OperatorsAreErrors) {
  for (const std::string op : {";", "&", "|", "<", ">", "(", ")"}) {
    const std::string msg = splitError("torchrun x " + op + " tee log");
    EXPECT_NE(msg.find("unquoted '" + op + "' at column 12"), std::string::npos) << msg;
  }
  EXPECT_EQ(split("'a|b' \"c;d\" e\\&f"), (Words{"a|b", "c;d", "e&f"}));
}

TEST(QuoteShellWord, SafeWordsStayBare) {
  EXPECT_EQ(quoteShellWord("--workers=4"), "--workers=4");
  EXPECT_EQ(quoteShellWord("anas-awadalla/mpt-1b-redpajama-200b"), "anas-awadalla/mpt-1b-redpajama-200b");
  EXPECT_EQ(quoteShellWord("a@b:c,d%e+f"), "a@b:c,d%e+f");
}

TEST(QuoteShellWord, EverythingElseIsSingleQuoted) {
  EXPECT_EQ(quoteShellWord(""), "''");
  EXPECT_EQ(quoteShellWord("a b"), "'a b'");
  EXPECT_EQ(quoteShellWord("it's"), R"('it'\''s')");
  EXPECT_EQ(quoteShellWord("'"), R"(''\''')");
  EXPECT_EQ(quoteShellWord("/d/{0000..0999}.tar"), "'/d/{0000..0999}.tar'");
  EXPECT_EQ(quoteShellWord("~"), "'~'");
  EXPECT_EQ(quoteShellWord("#x"), "'#x'");
  EXPECT_EQ(quoteShellWord("$HOME"), "'$HOME'");
  EXPECT_EQ(quoteShellWord("caf\xc3\xa9"), "'caf\xc3\xa9'");
}

// The one POSIX quoter (app/remote/shell_quote.cpp quotes remote command lines
// with it): a word starting with '=' is quoted, since zsh expands =cmd.
TEST(QuoteShellWord, QuotesALeadingEqualsSign) {
  EXPECT_EQ(quoteShellWord("=ls"), "'=ls'");
  EXPECT_EQ(quoteShellWord("="), "'='");
  EXPECT_EQ(quoteShellWord("a=b"), "a=b");
}

TEST(SingleQuoteShellWord, AlwaysQuotes) {
  EXPECT_EQ(singleQuoteShellWord("plain"), "'plain'");
  EXPECT_EQ(singleQuoteShellWord(""), "''");
  EXPECT_EQ(singleQuoteShellWord("A=B"), "'A=B'");
  EXPECT_EQ(singleQuoteShellWord("it's"), R"('it'\''s')");
}

TEST(JoinShellWords, JoinsWithOneSpace) {
  EXPECT_EQ(joinShellWords({}), "");
  EXPECT_EQ(joinShellWords({"a", "b c", ""}), "a 'b c' ''");
}

// --- property: join -> the real /bin/sh, and join -> split, give back the words

std::string randomWord(std::mt19937& rng) {
  static const std::string special = " \t\n\r'\"$`\\{}#~*?[];&|<>()!=-,.%";
  std::uniform_int_distribution<int> len(0, 12), kind(0, 3), byte(1, 255);
  std::uniform_int_distribution<size_t> pick(0, special.size() - 1);
  std::string w;
  for (int i = len(rng); i > 0; --i) {
    const int k = kind(rng);
    if (k == 0) {
      w += special[pick(rng)];
    } else if (k == 1) {
      w += static_cast<char>('a' + byte(rng) % 26);
    } else {
      w += static_cast<char>(byte(rng));
    }
  }
  return w;
}

Words randomWords(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(0, 8);
  Words words(count(rng));
  for (auto& w : words) w = randomWord(rng);
  return words;
}

// Runs `cmd` with popen (/bin/sh -c) and returns the NUL-terminated words it prints.
Words readBack(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  Words words;
  size_t start = 0;
  for (size_t nul; (nul = out.find('\0', start)) != std::string::npos; start = nul + 1) {
    words.push_back(out.substr(start, nul - start));
  }
  EXPECT_EQ(start, out.size()) << "trailing bytes without NUL";
  return words;
}

// The words /bin/sh reads in `joined`.
Words throughShell(const std::string& joined) {
  return readBack("/bin/sh -c 'for a in \"$@\"; do printf \"%s\\0\" \"$a\"; done' sh " + joined);
}

// The words bash reads in `joined` (bash parses it, not popen's sh).
Words throughBash(const std::string& joined) {
  return readBack("/bin/bash -c " +
                  quoteShellWord("set -- " + joined + "\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done"));
}

TEST(ShellWordsProperty, JoinThenSplitGivesTheWords) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 2000; ++trial) {
    const Words words = randomWords(rng);
    const std::string joined = joinShellWords(words);
    auto back = splitShellWords(joined);
    ASSERT_TRUE(back.isOk()) << joined << ": " << back.status().message();
    ASSERT_EQ(back.value(), words) << joined;
  }
}

TEST(ShellWordsProperty, RealShellReadsTheJoinedWordsBack) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const Words words = randomWords(rng);
    const std::string joined = joinShellWords(words);
    ASSERT_EQ(throughShell(joined), words) << joined;
  }
}

TEST(ShellWordsProperty, BashReadsTheJoinedWordsBackToo) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  std::mt19937 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    const Words words = randomWords(rng);
    const std::string joined = joinShellWords(words);
    ASSERT_EQ(throughBash(joined), words) << joined;
  }
}

TEST(ShellWordsProperty, RealShellAgreesWithSplitOnHandWrittenLines) {
  // Lines people paste, parsed by /bin/sh and by splitShellWords.
  const std::vector<std::string> lines = {
      R"(--a "b c" 'd e' f\ g)",
      "--n 125000\\\n  --m 250000 \\\n  --k=4",
      R"("x\$y\"z\\w\q" 'p'"q"r)",
      "a # trailing comment",
      R"('/path/to/shards/shard-{0000..0999}.tar' "/p/my shards/{0..9}.tar")",
      R"(--run_name "it's" --x '"')",
  };
  for (const auto& line : lines) EXPECT_EQ(throughShell(line), split(line)) << line;
}

// Random text (shell-heavy bytes): either words, or an error that says where.
TEST(SplitShellWords, RandomTextNeverCrashesAndErrorsSayWhere) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 5000; ++trial) {
    const std::string text = randomWord(rng) + randomWord(rng) + randomWord(rng);
    auto r = splitShellWords(text);
    if (!r.isOk()) {
      EXPECT_NE(r.status().message().find("column "), std::string::npos) << r.status().message();
    }
  }
}

}  // namespace
}  // namespace fs::protocol

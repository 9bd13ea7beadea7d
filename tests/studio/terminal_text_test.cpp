// Issue 42 (Low c): text from remote hosts reaches a terminal with its control
// characters made visible (NOTE [Remote text on a terminal] in
// studio/remote/terminal_text.cpp): the escape function, the stream buffer, and
// `remote follow` of a run whose events carry a title change, a screen clear, a
// CR overwrite and a C1 CSI.
#include "studio/remote/terminal_text.h"

#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QTemporaryDir>
#include <fstream>
#include <sstream>

#include "backend/protocol/wire/event_codec.h"
#include "studio/remote/remote_cli.h"

namespace fs::studio::remote {
namespace {

// Everything a hostile run can put on the terminal at once.
const std::string kHostile =
    "\x1b]0;title\x07|\x1b[2J|100%\rdone|\xc2\x9b"
    "2J|\x9b"
    "2J";
const std::string kHostileEscaped = "\\x1b]0;title\\x07|\\x1b[2J|100%\\x0ddone|\\u009b2J|\\x9b2J";

// Any C0 control but newline and tab, DEL, or a byte 0x80-0x9F (the text
// checked is ASCII: whatever a terminal would act on).
bool hasControl(const std::string& s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c <= 0x9f)) return true;
  }
  return false;
}

TEST(TerminalText, ControlsBecomeVisibleEscapes) {
  EXPECT_EQ(escapeTerminalText(kHostile), kHostileEscaped);
  EXPECT_EQ(escapeTerminalText("a\x7f\x01z"), "a\\x7f\\x01z");
  EXPECT_EQ(escapeTerminalText(std::string("a\0b", 3)), "a\\x00b");
}

TEST(TerminalText, TextNewlinesTabsAndUtf8AreUnchanged) {
  const std::string text =
      "step 3\tloss 2.5\n\xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\xa6\xa9 \xc2\xa0 ~\n";
  EXPECT_EQ(escapeTerminalText(text), text);
  // Not UTF-8: bytes 0x80-0x9F escaped, the others as they are.
  EXPECT_EQ(escapeTerminalText("\xe2\x80"), "\xe2\\x80");
  EXPECT_EQ(escapeTerminalText("\xc0\x9b\xff"), "\xc0\\x9b\xff");
  EXPECT_EQ(escapeTerminalText("\xed\xa0\x80"), "\xed\xa0\\x80");  // a surrogate is not UTF-8
}

TEST(TerminalText, TheStreamEscapesAcrossWritesAndLetsTheCommandsControlThrough) {
  std::ostringstream target;
  {
    TerminalTextBuf buf(target.rdbuf());
    std::ostream os(&buf);
    os << "\xc2" << std::flush;  // half of U+009B: held back
    os << "\x9b"
       << "x \xc3";
    os << "\xa9 ";
    writeTerminalControl(os, "\r\x1b[K");
    os << kHostile << '\n';
    os << "\xe2\x80";  // cut short at the end: escaped when the stream is done
  }
  EXPECT_EQ(target.str(), "\\u009bx \xc3\xa9 \r\x1b[K" + kHostileEscaped + "\n\xe2\\x80");
  std::ostringstream plain;
  writeTerminalControl(plain, "\r");
  EXPECT_EQ(plain.str(), "\r");
}

// A run directory on this machine whose events carry kHostile as a dataset name,
// and a line that is not an event at all.
std::string hostileRun(const QTemporaryDir& dir) {
  const std::string runDir = dir.path().toStdString();
  std::ofstream events(runDir + "/events.jsonl", std::ios::binary);
  protocol::Event step;
  step.seq = 0;
  step.t = 1000;
  protocol::StepEvent s;
  s.step = 1;
  s.loss = {{kHostile, 2.5}};
  step.body = s;
  events << protocol::encodeEventLine(step) << "\n";
  events << "garbage " << kHostile << "\n";
  protocol::Event fin;
  fin.seq = 1;
  fin.t = 2000;
  fin.body = protocol::RunFinishedEvent{};
  events << protocol::encodeEventLine(fin) << "\n";
  return runDir;
}

TEST(TerminalText, RemoteFollowOnATerminalShowsNoControlOfTheRun) {
  int argc = 1;
  char name[] = "terminal_text_test";
  char* argv[] = {name, nullptr};
  QCoreApplication app(argc, argv);
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const std::string runDir = hostileRun(dir);
  for (const bool jsonl : {false, true}) {
    std::vector<std::string> args = {"follow", "local:" + runDir, "--batch"};
    if (jsonl) args.push_back("--jsonl");
    std::ostringstream out, err;
    ASSERT_EQ(runRemoteCli(args, out, err, {true, true}), kExitOk) << err.str();
    EXPECT_FALSE(hasControl(out.str())) << out.str();
    EXPECT_FALSE(hasControl(err.str())) << err.str();
    EXPECT_NE(out.str().find("\\x1b]0;title\\x07"), std::string::npos) << out.str();
    if (jsonl) {
      EXPECT_NE(out.str().find("garbage " + kHostileEscaped), std::string::npos) << out.str();
    }
    // Into a pipe or a file the bytes go as they are.
    std::ostringstream rawOut, rawErr;
    ASSERT_EQ(runRemoteCli(args, rawOut, rawErr, {false, false}), kExitOk) << rawErr.str();
    EXPECT_NE(rawOut.str().find(jsonl ? "garbage " + kHostile : std::string("\x1b]0;title\x07")),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fs::studio::remote

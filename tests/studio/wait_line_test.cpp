// WaitLine: the text of a wait (what, time waited, the limit), drawn in place
// only when enabled, and erased by clear() and by the destructor.
#include "studio/remote/wait_line.h"

#include <gtest/gtest.h>

#include <sstream>

namespace fs::studio::remote {
namespace {

TEST(WaitLine, TextNamesTheWaitTheTimeWaitedAndTheLimit) {
  std::ostringstream os;
  WaitLine line(os, true, "the control_ack of seq 3", 120);
  EXPECT_EQ(line.text(7.4), "waiting for the control_ack of seq 3  0:07 of 2:00");
  EXPECT_EQ(line.text(61), "waiting for the control_ack of seq 3  1:01 of 2:00");
}

TEST(WaitLine, DrawsInPlaceAndIsErased) {
  std::ostringstream os;
  {
    WaitLine line(os, true, "x", 30);
    line.update(1);
    line.update(2);
    EXPECT_EQ(os.str(), "\rwaiting for x  0:01 of 0:30\x1b[K\rwaiting for x  0:02 of 0:30\x1b[K");
    line.clear();
    line.clear();  // idempotent
    EXPECT_EQ(os.str().substr(os.str().size() - 4), "\r\x1b[K");
  }
  // Cleared already: the destructor writes nothing more.
  EXPECT_EQ(os.str(), "\rwaiting for x  0:01 of 0:30\x1b[K\rwaiting for x  0:02 of 0:30\x1b[K\r\x1b[K");
}

TEST(WaitLine, DestructorErasesADrawnLine) {
  std::ostringstream os;
  { WaitLine(os, true, "x", 30).update(0); }
  EXPECT_EQ(os.str(), "\rwaiting for x  0:00 of 0:30\x1b[K\r\x1b[K");
}

TEST(WaitLine, PrintsNothingWhenNotATerminal) {
  std::ostringstream os;
  {
    WaitLine line(os, false, "x", 30);
    line.update(5);
    line.clear();
  }
  EXPECT_EQ(os.str(), "");
}

}  // namespace
}  // namespace fs::studio::remote

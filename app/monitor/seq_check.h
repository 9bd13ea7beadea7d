// SeqCheck: the seq bookkeeping of one events file (NOTE [Follow guarantees] in
// run_follower.cpp): a seq past the next expected one is delivered with a gap
// named, one already delivered is dropped and named, except while recovering
// after the file was truncated or replaced, when those are dropped quietly.
//
// Owned by EventTail, one per events file. Thread-safety: one thread at a time.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>

#include "app/monitor/follow_types.h"

namespace fs::app {

class SeqCheck {
 public:
  // `name`: the file's base name, for messages. `last`: the last seq delivered before.
  SeqCheck(QString name, std::optional<std::uint64_t> last) : name_(std::move(name)), last_(last) {}

  struct Verdict {
    bool deliver = false;
    std::optional<FollowIssue> issue;  // kSeqGap (delivered) or kDuplicate (dropped)
  };
  // The line at `offset` (line `lineNo`) carries `seq`.
  Verdict accept(std::uint64_t seq, std::uint64_t offset, std::uint64_t lineNo);
  // A line that could not be decoded but named `seq`: counts when it is the next one.
  void skipUndecodable(std::uint64_t seq);
  // The file is read again from its start: seqs up to last() are dropped quietly.
  void restart() { recovering_ = true; }

  std::optional<std::uint64_t> last() const { return last_; }
  std::uint64_t expected() const { return last_ ? *last_ + 1 : 0; }
  // ", skipping events up to seq N already shown", or "" before any.
  QString skippingSeqs() const;

 private:
  QString name_;
  std::optional<std::uint64_t> last_;
  bool recovering_ = false;
};

}  // namespace fs::app

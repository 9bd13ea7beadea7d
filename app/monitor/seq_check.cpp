#include "app/monitor/seq_check.h"

namespace fs::app {

SeqCheck::Verdict SeqCheck::accept(std::uint64_t seq, std::uint64_t offset, std::uint64_t lineNo) {
  const std::uint64_t want = expected();
  Verdict v;
  if (seq >= want) {
    if (seq > want) {
      FollowIssue gap{
          FollowIssue::Kind::kSeqGap,
          QStringLiteral("%1 line %2 (byte offset %3): seq %4 follows %5: events %6..%7 are missing")
              .arg(name_)
              .arg(lineNo)
              .arg(offset)
              .arg(seq)
              .arg(last_ ? QString::number(*last_) : QStringLiteral("the start"))
              .arg(want)
              .arg(seq - 1),
          lineNo, offset};
      gap.first_missing = want;
      gap.last_missing = seq - 1;
      v.issue = std::move(gap);
    }
    last_ = seq;
    recovering_ = false;
    v.deliver = true;
    return v;
  }
  if (recovering_) return v;  // shown before the file was truncated or replaced
  v.issue = FollowIssue{
      FollowIssue::Kind::kDuplicate,
      QStringLiteral("%1 line %2 (byte offset %3): seq %4 was already delivered (expected %5); dropped")
          .arg(name_)
          .arg(lineNo)
          .arg(offset)
          .arg(seq)
          .arg(want),
      lineNo, offset};
  return v;
}

void SeqCheck::skipUndecodable(std::uint64_t seq) {
  if (seq == expected()) last_ = seq;
}

QString SeqCheck::skippingSeqs() const {
  return last_ ? QStringLiteral(", skipping events up to seq %1 already shown").arg(*last_) : QString();
}

}  // namespace fs::app

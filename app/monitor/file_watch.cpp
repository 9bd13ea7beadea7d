#include "app/monitor/file_watch.h"

#include <algorithm>
#include <cstring>

namespace fs::app {
namespace {

using protocol::Status;

QString baseName(const std::string& described) {
  const auto slash = described.find_last_of('/');
  return QString::fromStdString(slash == std::string::npos ? described : described.substr(slash + 1));
}

}  // namespace

FileWatch::FileWatch(std::unique_ptr<ByteSource> source, const FollowPosition& start)
    : source_(std::move(source)),
      name_(baseName(source_->describe())),
      expected_inode_(start.inode),
      head_(start.head) {}

void FileWatch::readError(std::vector<FollowIssue>* issues, const QString& message) {
  // Polls repeat every few ms; a lasting failure is said once, until reading works again.
  const std::string key = message.toStdString();
  if (key == last_read_error_) return;
  last_read_error_ = key;
  issues->push_back({FollowIssue::Kind::kReadError, message});
}

void FileWatch::forgetHead() {
  head_.clear();
  head_checked_at_size_ = UINT64_MAX;
}

void FileWatch::saidRemoved(std::vector<FollowIssue>* issues) {
  if (removed_reported_) return;
  removed_reported_ = true;
  issues->push_back({FollowIssue::Kind::kRemoved,
                     QStringLiteral("%1 was removed; waiting for it to come back").arg(name_)});
}

std::optional<SourceStat> FileWatch::stat(const QString& skipping, std::vector<FollowIssue>* issues,
                                          bool* restart) {
  *restart = false;
  auto st = source_->stat();
  if (!st) {
    statFailed(st.status(), issues);
    return std::nullopt;
  }
  *restart = checkIdentity(*st, skipping, issues);
  return *st;
}

void FileWatch::statFailed(const Status& status, std::vector<FollowIssue>* issues) {
  if (status.code() != Status::Code::kNotFound) {
    readError(issues, QString::fromStdString(status.message()));
    return;
  }
  // Not created yet: the run has not started writing. Gone after it was there: said
  // once, and read from its start when it comes back.
  if (!seen_) return;
  vanished_ = true;
  saidRemoved(issues);
}

bool FileWatch::checkIdentity(const SourceStat& st, const QString& skipping,
                              std::vector<FollowIssue>* issues) {
  if (!seen_) {
    seen_ = true;
    last_read_error_.clear();
  }
  const bool came_back = vanished_;
  vanished_ = false;
  if (st.identity) {
    const std::uint64_t inode = st.identity->inode;
    identity_ = st.identity;
    if (expected_inode_ == 0 || expected_inode_ == inode) {
      expected_inode_ = inode;
      return false;
    }
    issues->push_back({FollowIssue::Kind::kReplaced,
                       QStringLiteral("%1 is not the file read before (inode %2, now %3): it was replaced; "
                                      "reading the new file from the start%4")
                           .arg(name_)
                           .arg(expected_inode_)
                           .arg(inode)
                           .arg(skipping)});
    expected_inode_ = inode;
    forgetHead();
    return true;
  }
  if (!came_back) return false;
  removed_reported_ = false;
  issues->push_back({FollowIssue::Kind::kReplaced,
                     QStringLiteral("%1 is back after it was removed; reading it from the start%2")
                         .arg(name_)
                         .arg(skipping)});
  forgetHead();
  return true;
}

FileWatch::Head FileWatch::checkHead(std::uint64_t size, const QString& skipping, std::uint64_t line,
                                     std::uint64_t offset, std::vector<FollowIssue>* issues) {
  if (size == head_checked_at_size_) return Head::kSame;
  char now[kHeadBytes];
  const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(size, kHeadBytes));
  std::size_t got = 0;
  while (got < want) {
    auto n = source_->read(got, now + got, want - got);
    if (!n) {
      if (n.status().code() != Status::Code::kNotFound)
        readError(issues, QString::fromStdString(n.status().message()));
      return Head::kUnreadable;
    }
    if (*n == 0) break;
    got += *n;
  }
  Head result = Head::kSame;
  if (std::memcmp(now, head_.data(), std::min(got, head_.size())) != 0) {
    issues->push_back(
        {FollowIssue::Kind::kReplaced,
         QStringLiteral("%1 starts with other bytes than the file read before: it was replaced; "
                        "reading the new file from the start%2")
             .arg(name_)
             .arg(skipping),
         line, offset});
    head_.clear();
    result = Head::kReplaced;
  }
  if (got >= head_.size()) head_.assign(now, got);
  head_checked_at_size_ = size;
  return result;
}

bool FileWatch::checkPath(const QString& skipping, std::vector<FollowIssue>* issues) {
  auto at_path = source_->statPath();
  if (!at_path) {
    if (at_path.status().code() == Status::Code::kNotFound) saidRemoved(issues);
    return false;
  }
  removed_reported_ = false;
  if (!at_path->identity || at_path->identity == identity_) return false;
  source_->reopen();
  issues->push_back(
      {FollowIssue::Kind::kReplaced,
       QStringLiteral("%1 was replaced by another file (inode %2, now %3); reading the new file "
                      "from the start%4")
           .arg(name_)
           .arg(identity_->inode)
           .arg(at_path->identity->inode)
           .arg(skipping)});
  // The next stat() opens whatever the path names then: this file, or a newer one
  // (reported in its turn).
  expected_inode_ = at_path->identity->inode;
  identity_.reset();
  forgetHead();
  return true;  // read the new file at once
}

}  // namespace fs::app

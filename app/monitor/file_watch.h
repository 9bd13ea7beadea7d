// FileWatch: the followed file's identity across polls, for EventTail (NOTE
// [Follow guarantees] in run_follower.cpp): a file not created yet is quiet, one
// removed is said once, one replaced (another inode, other first bytes where the
// source knows no inode, another file at the path of one held open) is said and
// must be read again from the start; a lasting read error is said once.
//
// Owns the ByteSource; owned by EventTail, which keeps the read position and
// restarts its lines when told to. Thread-safety: one thread at a time; does I/O
// through its source.
#pragma once

#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/monitor/byte_source.h"
#include "app/monitor/follow_types.h"

namespace fs::app {

class FileWatch {
 public:
  // How much of the file's start identifies it where the source knows no identity.
  static constexpr std::size_t kHeadBytes = 128;

  // REQUIRES: source. `start`: its inode and head identify the file read before.
  FileWatch(std::unique_ptr<ByteSource> source, const FollowPosition& start);

  ByteSource& source() { return *source_; }
  const QString& name() const { return name_; }  // the file's base name, for messages
  std::uint64_t inode() const { return identity_ ? identity_->inode : expected_inode_; }
  const std::string& head() const { return head_; }

  // In the messages below, `skipping` is appended to the sentence of a re-read
  // (SeqCheck::skippingSeqs()).

  // The source's stat(). None: nothing to read now (said when worth saying).
  // *restart: the source reads another file than before (said): read it from the start.
  std::optional<SourceStat> stat(const QString& skipping, std::vector<FollowIssue>* issues, bool* restart);
  // Sources without identity: compares the file's first bytes with those read
  // before. kUnreadable: could not read them (said unless the file is gone).
  // kReplaced (said at `line` / `offset`): read it from the start.
  enum class Head { kSame, kReplaced, kUnreadable };
  Head checkHead(std::uint64_t size, const QString& skipping, std::uint64_t line, std::uint64_t offset,
                 std::vector<FollowIssue>* issues);
  // At the end of the file read: whether another file has taken the path of the
  // one held open (said; the source reopens it): read it from the start, at once.
  bool checkPath(const QString& skipping, std::vector<FollowIssue>* issues);

  // The file is read again from the start (truncated): its first bytes are read anew.
  void forgetHead();
  // A read failed: said once until reading works again (readWorked()).
  void readError(std::vector<FollowIssue>* issues, const QString& message);
  void readWorked() { last_read_error_.clear(); }

 private:
  void statFailed(const protocol::Status& status, std::vector<FollowIssue>* issues);
  bool checkIdentity(const SourceStat& st, const QString& skipping, std::vector<FollowIssue>* issues);
  void saidRemoved(std::vector<FollowIssue>* issues);

  std::unique_ptr<ByteSource> source_;
  QString name_;
  bool seen_ = false;                     // stat() has succeeded at least once
  bool vanished_ = false;                 // stat() said kNotFound after that
  std::optional<FileIdentity> identity_;  // of the file the source reads, where it knows one
  std::uint64_t expected_inode_;          // from the start position; 0 = accept any
  std::string head_;                      // the file's first bytes (identity-less sources)
  std::uint64_t head_checked_at_size_ = UINT64_MAX;
  bool removed_reported_ = false;
  std::string last_read_error_;  // said already; cleared when reading works again
};

}  // namespace fs::app

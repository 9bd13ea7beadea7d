#include "app/monitor/rank_log_tail.h"

#include <algorithm>
#include <charconv>

#include "backend/protocol/wire/run_dir.h"

namespace fs::app {

int rankOfLogFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "rank-";
  constexpr std::string_view kSuffix = ".log";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return -1;
  std::string_view digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 9) return -1;
  int rank = -1;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (ec != std::errc() || p != digits.data() + digits.size()) return -1;
  return rank;
}

RankLogTail::RankLogTail(std::shared_ptr<RunDirSource> runDir, std::map<int, std::uint64_t> offsets,
                         int listEvery)
    : dir_(std::move(runDir)), list_every_(std::max(1, listEvery)) {
  for (const auto& [rank, offset] : offsets) files_[rank].lines.reset(offset);
}

std::map<int, std::uint64_t> RankLogTail::offsets() const {
  std::map<int, std::uint64_t> out;
  for (const auto& [rank, f] : files_) out[rank] = f.lines.lineStart();
  return out;
}

std::size_t RankLogTail::bufferedBytes(int rank) const {
  const auto it = files_.find(rank);
  return it == files_.end() ? 0 : it->second.lines.bufferedBytes();
}

void RankLogTail::poll(QList<RankLogLine>* lines, std::vector<FollowIssue>* issues) {
  const bool known =
      std::any_of(files_.begin(), files_.end(), [](const auto& e) { return !e.second.name.empty(); });
  if (!known || ++polls_since_list_ >= list_every_) {
    polls_since_list_ = 0;
    auto names = dir_->list(std::string(protocol::kLogsDirName));
    if (!names) return;  // logs/ not created yet (or unreadable now): nothing to follow
    std::map<int, std::string> present;
    for (const std::string& name : *names) {
      const int rank = rankOfLogFileName(name);
      if (rank >= 0) present.emplace(rank, name);
    }
    for (auto& [rank, f] : files_) {
      if (!present.contains(rank)) {  // gone: let go of it
        f.source.reset();
        f.name.clear();
      }
    }
    for (const auto& [rank, name] : present) {
      File& f = files_[rank];
      if (f.name != name) f.source.reset();
      f.name = name;
    }
  }
  for (auto& [rank, f] : files_)
    if (!f.name.empty()) readFile(rank, f.name, f, lines, issues);
}

void RankLogTail::reportOnce(File& f, const std::string& message, std::vector<FollowIssue>* issues) {
  // Said once per file until it can be read again: polls come every few ms.
  if (f.error_reported) return;
  f.error_reported = true;
  issues->push_back({FollowIssue::Kind::kLogIssue, QString::fromStdString(message)});
}

void RankLogTail::readFile(int rank, const std::string& name, File& f, QList<RankLogLine>* lines,
                           std::vector<FollowIssue>* issues) {
  if (!f.source) f.source = dir_->open(std::string(protocol::kLogsDirName) + "/" + name);
  auto st = f.source->stat();
  if (!st) {
    if (st.status().code() != protocol::Status::Code::kNotFound) reportOnce(f, st.status().message(), issues);
    return;
  }
  const auto size = st->size;
  const std::uint64_t read_from = f.lines.position();
  if (size < read_from) {
    issues->push_back({FollowIssue::Kind::kLogIssue,
                       QStringLiteral("%1 shrank to %2 bytes (had %3): reading it again from the start")
                           .arg(QString::fromStdString(f.source->describe()))
                           .arg(size)
                           .arg(read_from)});
    f.lines.reset(0);
  }
  const std::uint64_t from = f.lines.position();
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size - from, kMaxReadPerPoll));
  if (want == 0) {
    f.error_reported = false;
    // Read to its end: a file held open may have lost its path to another one.
    if (!st->identity) return;
    auto at_path = f.source->statPath();
    if (!at_path || !at_path->identity || at_path->identity == st->identity) return;
    issues->push_back({FollowIssue::Kind::kLogIssue,
                       QStringLiteral("%1 was replaced by another file: reading the new one from the start")
                           .arg(QString::fromStdString(f.source->describe()))});
    f.source->reopen();
    f.lines.reset(0);
    return;
  }
  read_buf_.resize(want);
  auto got = f.source->read(from, read_buf_.data(), want);
  if (!got) {
    if (got.status().code() != protocol::Status::Code::kNotFound)
      reportOnce(f, got.status().message(), issues);
    return;
  }
  f.error_reported = false;

  f.lines.feed(std::string_view(read_buf_.data(), *got), [&](const protocol::LineSplitter::Line& line) {
    std::string_view text = line.text;
    if (!line.truncated && text.ends_with('\r')) text.remove_suffix(1);
    QString shown = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
    if (line.truncated) shown += QString::fromStdString(protocol::truncatedLineMark(kMaxLineBytes));
    lines->push_back({rank, std::move(shown)});
  });
}

}  // namespace fs::app

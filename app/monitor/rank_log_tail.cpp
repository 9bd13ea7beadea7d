#include "app/monitor/rank_log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

namespace fs::app {
namespace {

QString fromPath(const std::filesystem::path& p) {
  return QString::fromStdString(p.string());
}

}  // namespace

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

RankLogTail::RankLogTail(std::filesystem::path logsDir, std::map<int, std::uint64_t> offsets)
    : dir_(std::move(logsDir)) {
  for (const auto& [rank, offset] : offsets) files_[rank].offset = offset;
}

std::map<int, std::uint64_t> RankLogTail::offsets() const {
  std::map<int, std::uint64_t> out;
  for (const auto& [rank, f] : files_) out[rank] = f.offset;
  return out;
}

void RankLogTail::poll(QList<RankLogLine>* lines, std::vector<FollowIssue>* issues) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir_, ec);
  if (ec) return;  // logs/ not created yet: nothing to follow
  std::map<int, std::filesystem::path> present;
  for (const std::filesystem::directory_iterator end; it != end; it.increment(ec)) {
    const int rank = rankOfLogFileName(it->path().filename().native());
    if (rank >= 0) present.emplace(rank, it->path());
    if (ec) break;
  }
  for (const auto& [rank, path] : present) readFile(rank, path, files_[rank], lines, issues);
}

void RankLogTail::readFile(int rank, const std::filesystem::path& path, File& f, QList<RankLogLine>* lines,
                           std::vector<FollowIssue>* issues) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // Said once per file until it can be read again: polls come every few ms.
    if (errno != ENOENT && !f.error_reported) {
      f.error_reported = true;
      issues->push_back({FollowIssue::Kind::kLogIssue,
                         QStringLiteral("cannot read %1: %2")
                             .arg(fromPath(path), QString::fromLocal8Bit(std::strerror(errno)))});
    }
    return;
  }
  f.error_reported = false;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t read_from = f.offset + f.partial.size();
  if (size < read_from) {
    issues->push_back({FollowIssue::Kind::kLogIssue,
                       QStringLiteral("%1 shrank to %2 bytes (had %3): reading it again from the start")
                           .arg(fromPath(path))
                           .arg(size)
                           .arg(read_from)});
    f.offset = 0;
    f.partial.clear();
  }
  const std::uint64_t from = f.offset + f.partial.size();
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(size - from, kMaxReadPerPoll));
  if (want == 0) {
    ::close(fd);
    return;
  }
  std::string chunk(want, '\0');
  const ssize_t got = ::pread(fd, chunk.data(), want, static_cast<off_t>(from));
  ::close(fd);
  if (got <= 0) return;
  chunk.resize(static_cast<std::size_t>(got));
  f.partial += chunk;

  std::size_t start = 0;
  for (std::size_t nl = f.partial.find('\n'); nl != std::string::npos; nl = f.partial.find('\n', start)) {
    std::size_t end = nl;
    if (end > start && f.partial[end - 1] == '\r') --end;
    lines->push_back(
        {rank, QString::fromUtf8(f.partial.data() + start, static_cast<qsizetype>(end - start))});
    start = nl + 1;
  }
  f.offset += start;
  f.partial.erase(0, start);
}

}  // namespace fs::app

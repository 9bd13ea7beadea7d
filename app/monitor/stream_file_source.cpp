#include "app/monitor/stream_file_source.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>

#include "app/monitor/host_file_source.h"

namespace fs::app {
namespace {

using protocol::Status;
using protocol::StatusOr;

constexpr std::size_t kReadChunk = 256 * 1024;
constexpr std::size_t kMaxLine = 4096;

std::string parentOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The space-separated words of a frame's header line.
std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= line.size()) {
    const std::size_t space = line.find(' ', start);
    out.emplace_back(
        line.substr(start, space == std::string_view::npos ? std::string_view::npos : space - start));
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  return out;
}

bool number(const std::string& text, std::uint64_t* out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

bool fileWords(const std::vector<std::string>& w, FileIdentity* id, std::uint64_t* size) {
  return w.size() == 4 && number(w[1], &id->device) && number(w[2], &id->inode) && number(w[3], size);
}

}  // namespace

StreamFileSource::StreamFileSource(remote::Host& host, std::string path, StreamSourceOptions options)
    : host_(host), path_(std::move(path)), options_(std::move(options)) {}

StreamFileSource::~StreamFileSource() = default;

std::string StreamFileSource::describe() const {
  return host_.name() + ":" + path_;
}

void StreamFileSource::close() {
  stream_.reset();
  in_.clear();
  header_seen_ = false;
  pending_data_ = 0;
  state_ = State::kOpening;
  path_state_ = PathState::kSame;
  win_.clear();
  win_start_ = 0;
}

Status StreamFileSource::broken(const std::string& why) {
  const std::uint64_t at = windowEnd();
  close();
  return Status::ioError(describe() + ": the stream from offset " + std::to_string(opened_at_) +
                         " broke at offset " + std::to_string(at) + ": " + why +
                         "; the next poll opens another");
}

Status StreamFileSource::ensureOpen(std::uint64_t offset) {
  if (stream_ != nullptr) return Status::ok();
  close();
  std::vector<std::string> argv = options_.engine;
  argv.insert(argv.end(), {"stream", "--offset", std::to_string(offset), "--poll-ms",
                           std::to_string(options_.poll_ms), "--", path_});
  auto stream = host_.openStream(argv);
  if (!stream.isOk()) {
    return Status::ioError(describe() + ": cannot follow from offset " + std::to_string(offset) + ": " +
                           stream.status().message());
  }
  stream_ = std::move(*stream);
  ++opened_;
  opened_at_ = offset;
  win_start_ = offset;
  // Until the stream says which file it holds (or that there is none).
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.open_timeout_ms);
  while (state_ == State::kOpening) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) return broken("no first frame in " + std::to_string(options_.open_timeout_ms) + " ms");
    Status pumped = pump(static_cast<int>(left));
    if (!pumped.isOk()) return pumped;
  }
  return Status::ok();
}

Status StreamFileSource::pump(int timeout_ms) {
  if (stream_ == nullptr) return Status::ok();
  const std::size_t held = win_.size() + in_.size();
  if (held >= options_.max_buffer) return Status::ok();  // the tail reads first
  const std::size_t room = std::min(kReadChunk, options_.max_buffer - held);
  auto got = stream_->read(in_, room, timeout_ms);
  if (!got.isOk()) return broken(got.status().message());
  return parse();
}

Status StreamFileSource::parse() {
  std::size_t at = 0;
  Status status = Status::ok();
  while (at < in_.size()) {
    if (pending_data_ > 0) {
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(pending_data_, in_.size() - at));
      win_.append(in_, at, take);
      at += take;
      pending_data_ -= take;
      continue;
    }
    const std::size_t nl = in_.find('\n', at);
    if (nl == std::string::npos) {
      if (in_.size() - at > kMaxLine)
        status = broken("a frame header longer than " + std::to_string(kMaxLine));
      break;
    }
    const std::string_view line(in_.data() + at, nl - at);
    const auto w = words(line);
    at = nl + 1;
    if (!header_seen_) {
      if (w.size() != 2 || w[0] != "flamingo-stream") {
        status = broken("the engine's output is not a stream ('" + std::string(line.substr(0, 80)) + "')");
        break;
      }
      if (w[1] != "1") {
        status = broken("the engine speaks stream format " + w[1] + "; this app reads format 1");
        break;
      }
      header_seen_ = true;
      continue;
    }
    const std::string& kind = w[0];
    FileIdentity id;
    std::uint64_t n = 0;
    if (kind == "D" && w.size() == 2 && number(w[1], &n)) {
      pending_data_ = n;
    } else if (kind == "S" && fileWords(w, &id, &n)) {
      state_ = State::kHeld;
      identity_ = id;
      size_ = n;
      if (n < windowEnd()) {  // truncated: the stream goes on from the new end
        win_.clear();
        win_start_ = n;
      }
    } else if (kind == "P" && w.size() == 2 && w[1] == "=") {
      path_state_ = PathState::kSame;
    } else if (kind == "P" && w.size() == 2 && w[1] == "-") {
      path_state_ = PathState::kGone;
    } else if (kind == "P" && fileWords(w, &id, &n)) {
      path_state_ = PathState::kOther;
      other_ = SourceStat{n, id};
    } else if (kind == "N" && w.size() == 2 && (w[1] == "file" || w[1] == "folder")) {
      state_ = w[1] == "file" ? State::kMissingFile : State::kMissingFolder;
    } else if (kind == "E") {
      status = broken("the engine says: " + std::string(line.substr(std::min<std::size_t>(2, line.size()))));
      break;
    } else {
      status = broken("an unknown frame '" + std::string(line.substr(0, 80)) + "'");
      break;
    }
  }
  if (status.isOk()) in_.erase(0, at);
  return status;
}

StatusOr<SourceStat> StreamFileSource::stat() {
  Status open = ensureOpen(resume_at_ > 0 ? resume_at_ - 1 : 0);
  if (!open.isOk()) return open;
  Status pumped = pump(0);
  if (!pumped.isOk()) return pumped;
  switch (state_) {
    case State::kHeld:
      return SourceStat{size_, identity_};
    case State::kMissingFile:
      return Status::notFound(describe() + " does not exist");
    case State::kMissingFolder:
      return Status::ioError("folder " + host_.name() + ":" + parentOf(path_) +
                             " does not exist (or is not a folder); waiting for it");
    case State::kOpening:
      break;
  }
  return Status::ioError(describe() + ": the stream has not said which file it holds");
}

StatusOr<std::size_t> StreamFileSource::read(std::uint64_t offset, char* buf, std::size_t n) {
  if (stream_ != nullptr && (offset < win_start_ || offset > windowEnd()))
    close();  // outside: start over there
  Status open = ensureOpen(offset);
  if (!open.isOk()) return open;
  if (state_ == State::kMissingFile) return Status::notFound(describe() + " does not exist");
  if (state_ != State::kHeld)
    return Status::ioError(describe() + ": no file to read at offset " + std::to_string(offset));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.read_timeout_ms);
  while (offset >= windowEnd()) {
    if (offset < win_start_ || offset > windowEnd() || stream_ == nullptr)
      return std::size_t{0};  // shorter now
    // Announced but not yet here: wait for it; else only what has come.
    const bool announced = offset < size_;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (announced && left <= 0)
      return broken("offset " + std::to_string(offset) + " announced but not received in " +
                    std::to_string(options_.read_timeout_ms) + " ms");
    Status pumped = pump(announced ? static_cast<int>(left) : 0);
    if (!pumped.isOk()) return pumped;
    if (!announced && offset >= windowEnd()) return std::size_t{0};
  }
  const std::size_t from = static_cast<std::size_t>(offset - win_start_);
  const std::size_t got = std::min(n, win_.size() - from);
  std::memcpy(buf, win_.data() + from, got);
  resume_at_ = offset + got;
  // Drop what the tail has read, but for keep_behind bytes; in large steps.
  const std::size_t drop = from + got > options_.keep_behind ? from + got - options_.keep_behind : 0;
  if (drop >= (1u << 20) || drop * 2 >= win_.size()) {
    win_.erase(0, drop);
    win_start_ += drop;
  }
  return got;
}

StatusOr<SourceStat> StreamFileSource::statPath() {
  auto held = stat();
  if (!held.isOk()) return held;
  switch (path_state_) {
    case PathState::kSame:
      return held;
    case PathState::kOther:
      return other_;
    case PathState::kGone:
      return Status::notFound(describe() + " was removed");
  }
  return held;
}

void StreamFileSource::reopen() {
  close();
  resume_at_ = 0;
}

StreamRunDir::StreamRunDir(remote::Host& host, std::string dir, StreamSourceOptions options)
    : host_(host), dir_(std::move(dir)), options_(std::move(options)) {}

std::string StreamRunDir::describe() const {
  return host_.name() + ":" + dir_;
}

std::unique_ptr<ByteSource> StreamRunDir::open(const std::string& relativePath) {
  return std::make_unique<StreamFileSource>(host_, joinHostPath(dir_, relativePath), options_);
}

StatusOr<std::vector<std::string>> StreamRunDir::list(const std::string& relativeDir) {
  return listHostDir(host_, joinHostPath(dir_, relativeDir));
}

}  // namespace fs::app

#include "backend/data/shards/tar_samples.h"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <set>

#include "backend/data/shards/member_name.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr std::string_view kReasonNames[kDropReasonCount] = {"non_regular", "no_extension", "unsafe_name",
                                                             "too_large",   "corrupt_tar",  "empty_shard"};
constexpr size_t kReadBufferBytes = size_t{1} << 20;

std::string entryName(archive_entry* entry) {
  // UTF-8 first: pax names are UTF-8 and must not depend on the process locale.
  if (const char* utf8 = archive_entry_pathname_utf8(entry)) return utf8;
  if (const char* raw = archive_entry_pathname(entry)) return raw;
  return {};
}

}  // namespace

std::string_view dropReasonName(DropReason reason) {
  return kReasonNames[static_cast<size_t>(reason)];
}

uint64_t DropCounts::total() const {
  uint64_t sum = 0;
  for (uint64_t c : counts) sum += c;
  return sum;
}

DropCounts& DropCounts::operator+=(const DropCounts& other) {
  for (size_t i = 0; i < kDropReasonCount; ++i) counts[i] += other.counts[i];
  return *this;
}

std::string DropCounts::toString() const {
  std::string out;
  for (size_t i = 0; i < kDropReasonCount; ++i) {
    if (counts[i] == 0) continue;
    if (!out.empty()) out += ' ';
    out.append(kReasonNames[i]).append("=").append(std::to_string(counts[i]));
  }
  return out;
}

const Bytes* Sample::find(std::string_view ext) const {
  auto it = fields.find(ext);
  return it == fields.end() ? nullptr : &it->second;
}

struct TarSampleReader::Impl {
  std::string url;
  TarReaderOptions options;
  std::unique_ptr<ShardStream> stream;
  archive* ar = nullptr;
  std::vector<char> buffer;
  size_t prefetched = 0;  // bytes already in buffer for libarchive's first read
  Status streamError;     // set by the read callback; wins over libarchive's view
  Status deferredError;   // returned by the next call to next(), once
  bool started = false;
  bool done = false;
  std::optional<Sample> pending;  // the sample being built
  std::set<std::string, std::less<>> pendingExts;
  uint64_t pendingBytes = 0;  // the pending sample's members together
  bool pendingUnsafe = false;
  DropCounts drops;
  std::vector<std::string> problems;
  uint64_t problemsNotKept = 0;

  ~Impl() { stop(); }

  void stop() {
    if (ar) archive_read_free(ar);
    ar = nullptr;
    if (stream) stream->close();
    done = true;
  }

  void report(DropReason reason, const std::string& member, const std::string& detail) {
    drops[reason]++;
    std::string msg = url + ": " + std::string(dropReasonName(reason));
    if (!member.empty()) msg += " at member '" + member + "'";
    if (!detail.empty()) msg += ": " + detail;
    if (options.onProblem) options.onProblem(msg);
    if (problems.size() < options.maxProblemMessages)
      problems.push_back(std::move(msg));
    else
      ++problemsNotKept;
  }

  static la_ssize_t readCallback(archive* a, void* self, const void** out) {
    auto* impl = static_cast<Impl*>(self);
    *out = impl->buffer.data();
    if (impl->prefetched > 0) return static_cast<la_ssize_t>(std::exchange(impl->prefetched, 0));
    StatusOr<size_t> n = impl->stream->read(impl->buffer.data(), impl->buffer.size());
    if (!n.isOk()) {
      impl->streamError = n.status();
      archive_set_error(a, EIO, "%s", n.status().message().c_str());
      return -1;
    }
    return static_cast<la_ssize_t>(n.value());
  }

  // Sets done when the shard is already over (empty, stream error, not a tar).
  void start() {
    started = true;
    buffer.resize(kReadBufferBytes);
    StatusOr<size_t> first = stream->read(buffer.data(), buffer.size());
    if (!first.isOk()) {
      deferredError = first.status();
      stop();
      return;
    }
    if (first.value() == 0) {
      report(DropReason::kEmptyShard, "", "0 bytes");
      stop();
      return;
    }
    prefetched = first.value();
    ar = archive_read_new();
    archive_read_support_format_tar(ar);
    archive_read_support_filter_gzip(ar);
    if (archive_read_open(ar, this, nullptr, &Impl::readCallback, nullptr) != ARCHIVE_OK) {
      failArchive("", "");
    }
  }

  // libarchive gave up: a stream error is kept for next() to return, anything
  // else is counted. The partial sample goes either way.
  void failArchive(const std::string& member, const char* where) {
    if (!streamError.isOk()) {
      deferredError = streamError;
    } else {
      const char* said = ar ? archive_error_string(ar) : nullptr;
      report(DropReason::kCorruptTar, member,
             std::string(where) + (said ? said : "unknown libarchive error"));
    }
    pending.reset();
    stop();
  }

  // A sample completed before the failure is still delivered; the error comes on the next call.
  StatusOr<std::optional<Sample>> afterFailure(std::optional<Sample> finished) {
    if (finished || deferredError.isOk()) return finished;
    return std::exchange(deferredError, Status());
  }

  std::optional<Sample> takePending() {
    std::optional<Sample> out;
    if (pending && !pendingUnsafe && !pending->fields.empty()) out = std::move(pending);
    pending.reset();
    pendingExts.clear();
    pendingBytes = 0;
    pendingUnsafe = false;
    return out;
  }

  // Reads the current member's data, stopping once it holds more than `limit`
  // bytes; false on a libarchive failure. Tar headers always carry the size;
  // growing is only for filters that do not.
  bool readData(Bytes& data, archive_entry* entry, uint64_t limit) {
    bool known = archive_entry_size_is_set(entry);
    data.resize(known ? static_cast<size_t>(archive_entry_size(entry)) : 0);
    size_t got = 0;
    for (;;) {
      if (got == data.size()) {
        if (known) break;
        data.resize(got + 64 * 1024);
      }
      la_ssize_t n = archive_read_data(ar, data.data() + got, data.size() - got);
      if (n < 0) return false;
      if (n == 0) break;
      got += static_cast<size_t>(n);
      if (got > limit) break;  // the caller sees the size and drops it
    }
    data.resize(got);
    return true;
  }

  StatusOr<std::optional<Sample>> next() {
    if (!started) start();
    if (done) return afterFailure(std::nullopt);
    for (;;) {
      archive_entry* entry = nullptr;
      int rc = archive_read_next_header(ar, &entry);
      if (rc == ARCHIVE_EOF) {
        std::optional<Sample> last = takePending();
        stop();  // the end blocks are read: whatever the command does next does not matter
        return last;
      }
      if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {  // RETRY, FAILED, FATAL: no resynchronising
        failArchive(lastMember, lastMember.empty() ? "bad first header: " : "bad header after this member: ");
        return afterFailure(std::nullopt);
      }
      std::string name = entryName(entry);
      lastMember = name;
      if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
        drops[DropReason::kNonRegular]++;
        continue;
      }
      MemberName parsed = parseMemberName(name);
      if (parsed.kind == MemberName::Kind::kMeta) continue;
      bool unsafe = isUnsafeMemberName(name);
      if (parsed.kind == MemberName::Kind::kNoExtension && !unsafe) {
        drops[DropReason::kNoExtension]++;
        continue;
      }
      std::optional<Sample> finished;
      if (pending && (pending->key != parsed.key || pendingExts.contains(parsed.ext)))
        finished = takePending();
      if (!pending) pending = Sample{parsed.key, url, {}};
      pendingExts.insert(parsed.ext);
      if (unsafe) {
        pendingUnsafe = true;
        report(DropReason::kUnsafeName, name, "absolute path or '..' component; sample dropped");
      } else if (archive_entry_size_is_set(entry) &&
                 static_cast<uint64_t>(archive_entry_size(entry)) > options.maxMemberBytes) {
        report(DropReason::kTooLarge, name,
               std::to_string(archive_entry_size(entry)) + " bytes > limit " +
                   std::to_string(options.maxMemberBytes));
      } else if (archive_entry_size_is_set(entry) &&
                 static_cast<uint64_t>(archive_entry_size(entry)) > sampleRoom()) {
        reportSampleTooLarge(name, static_cast<uint64_t>(archive_entry_size(entry)));
      } else {
        Bytes data;
        if (!readData(data, entry, std::min(options.maxMemberBytes, sampleRoom()))) {
          failArchive(name, "");
          return afterFailure(std::move(finished));
        }
        if (data.size() > options.maxMemberBytes) {
          report(DropReason::kTooLarge, name,
                 "more than limit " + std::to_string(options.maxMemberBytes) + " bytes");
        } else if (data.size() > sampleRoom()) {
          reportSampleTooLarge(name, data.size());
        } else {
          pendingBytes += data.size();
          pending->fields.emplace(parsed.ext, std::move(data));
        }
      }
      if (finished) return finished;
    }
  }

  // Bytes the pending sample may still take under maxSampleBytes.
  uint64_t sampleRoom() const {
    return options.maxSampleBytes > pendingBytes ? options.maxSampleBytes - pendingBytes : 0;
  }

  void reportSampleTooLarge(const std::string& member, uint64_t memberBytes) {
    report(DropReason::kTooLarge, member,
           "sample '" + pending->key + "' would hold more than " +
               std::to_string(pendingBytes + memberBytes) + " bytes > limit " +
               std::to_string(options.maxSampleBytes) + " (maxSampleBytes)");
  }

  std::string lastMember;
};

TarSampleReader::TarSampleReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TarSampleReader::TarSampleReader(TarSampleReader&&) noexcept = default;
TarSampleReader& TarSampleReader::operator=(TarSampleReader&&) noexcept = default;
TarSampleReader::~TarSampleReader() = default;

StatusOr<TarSampleReader> TarSampleReader::open(const std::string& url, TarReaderOptions options) {
  StatusOr<std::unique_ptr<ShardStream>> stream =
      options.filesOnly ? openShardFile(url) : openShardStream(url, options.interrupt);
  if (!stream.isOk()) return stream.status();
  return fromStream(std::move(stream).value(), std::move(options));
}

TarSampleReader TarSampleReader::fromStream(std::unique_ptr<ShardStream> stream, TarReaderOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->url = stream->url();
  impl->options = std::move(options);
  impl->stream = std::move(stream);
  return TarSampleReader(std::move(impl));
}

StatusOr<std::optional<Sample>> TarSampleReader::next() {
  return impl_->next();
}
void TarSampleReader::close() {
  impl_->stop();
}
const std::string& TarSampleReader::url() const {
  return impl_->url;
}
const DropCounts& TarSampleReader::drops() const {
  return impl_->drops;
}
const std::vector<std::string>& TarSampleReader::problems() const {
  return impl_->problems;
}
uint64_t TarSampleReader::problemsNotKept() const {
  return impl_->problemsNotKept;
}

}  // namespace fs::data

#include "backend/data/shards/tar_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <locale.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "backend/data/shards/member_name.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {

// NOTE [Writer locale]
// libarchive converts names through the calling thread's locale; under the
// "C" locale its pax writer crashes (3.6.2: strlen on a failed conversion)
// on non-ASCII names. Every libarchive call of the writer therefore runs
// under C.UTF-8, switched per thread with uselocale so nothing else changes.
locale_t utf8Locale() {
  static locale_t loc = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));  // lives as long as the process
  return loc;
}

class ScopedUtf8Locale {
 public:
  ScopedUtf8Locale() : old_(utf8Locale() ? ::uselocale(utf8Locale()) : locale_t(0)) {}
  ~ScopedUtf8Locale() {
    if (old_) ::uselocale(old_);
  }
  ScopedUtf8Locale(const ScopedUtf8Locale&) = delete;
  ScopedUtf8Locale& operator=(const ScopedUtf8Locale&) = delete;

 private:
  locale_t old_;
};

bool isAscii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

}  // namespace

struct TarWriter::Impl {
  std::string path;
  std::string partial;
  TarWriterOptions options;
  int fd = -1;
  archive* ar = nullptr;
  Status error;
  bool finished = false;

  ~Impl() {
    if (ar) archive_write_free(ar);
    if (fd >= 0) ::close(fd);
    if (!finished) ::unlink(partial.c_str());
  }

  Status fail(const std::string& what, const char* detail) {
    error = Status::ioError("shard '" + partial + "': " + what + ": " + (detail ? detail : "unknown error"));
    return error;
  }
};

TarWriter::TarWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TarWriter::TarWriter(TarWriter&&) noexcept = default;
TarWriter& TarWriter::operator=(TarWriter&&) noexcept = default;
TarWriter::~TarWriter() = default;

StatusOr<TarWriter> TarWriter::create(const std::string& path, TarWriterOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->partial = path + ".partial";
  impl->options = options;
  impl->fd = ::open(impl->partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl->fd < 0) {
    impl->finished = true;  // nothing of ours to remove
    return Status::ioError("create shard '" + impl->partial + "': " + std::strerror(errno));
  }
  ScopedUtf8Locale utf8;
  impl->ar = archive_write_new();
  // pax_restricted: ustar headers, pax records only for long or non-ASCII names.
  if (archive_write_set_format_pax_restricted(impl->ar) != ARCHIVE_OK ||
      archive_write_open_fd(impl->ar, impl->fd) != ARCHIVE_OK)
    return impl->fail("open", archive_error_string(impl->ar));
  return TarWriter(std::move(impl));
}

Status TarWriter::add(std::string_view memberName, std::string_view bytes) {
  return add(memberName,
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

Status TarWriter::add(std::string_view memberName, std::span<const uint8_t> bytes) {
  Impl& w = *impl_;
  if (!w.error.isOk()) return w.error;
  if (w.finished) return Status::invalidArgument("shard '" + w.path + "': add() after finish()");
  if (isUnsafeMemberName(memberName) || memberName.back() == '/')
    return Status::invalidArgument("shard '" + w.path + "': member name '" + std::string(memberName) +
                                   "' is empty, absolute, has a '..' component or ends in '/'");
  if (!isAscii(memberName) && !utf8Locale())
    return Status::unsupported("shard '" + w.path + "': non-ASCII member name '" + std::string(memberName) +
                               "' needs the C.UTF-8 locale, which this system lacks");
  ScopedUtf8Locale utf8;
  archive_entry* entry = archive_entry_new();
  std::string name(memberName);
  archive_entry_set_pathname_utf8(entry, name.c_str());  // locale-independent
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_entry_set_perm(entry, 0644);
  archive_entry_set_size(entry, static_cast<la_int64_t>(bytes.size()));
  archive_entry_set_mtime(entry, w.options.mtime, 0);
  archive_entry_set_uid(entry, 0);
  archive_entry_set_gid(entry, 0);
  int rc = archive_write_header(w.ar, entry);
  archive_entry_free(entry);
  if (rc != ARCHIVE_OK) return w.fail("member '" + name + "' header", archive_error_string(w.ar));
  size_t done = 0;
  while (done < bytes.size()) {
    la_ssize_t n = archive_write_data(w.ar, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return w.fail("member '" + name + "' data", archive_error_string(w.ar));
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status TarWriter::finish() {
  Impl& w = *impl_;
  if (!w.error.isOk()) return w.error;
  if (w.finished) return Status::invalidArgument("shard '" + w.path + "': finish() twice");
  ScopedUtf8Locale utf8;
  if (archive_write_close(w.ar) != ARCHIVE_OK) return w.fail("close", archive_error_string(w.ar));
  archive_write_free(w.ar);
  w.ar = nullptr;
  if (::fsync(w.fd) != 0) return w.fail("fsync", std::strerror(errno));
  int fd = std::exchange(w.fd, -1);
  if (::close(fd) != 0) return w.fail("close", std::strerror(errno));
  if (std::rename(w.partial.c_str(), w.path.c_str()) != 0)
    return w.fail("rename to '" + w.path + "'", std::strerror(errno));
  w.finished = true;
  // The rename is durable only once the directory entry is.
  std::string dir = w.path.substr(0, w.path.find_last_of('/') + 1);
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::ok();
}

const std::string& TarWriter::path() const {
  return impl_->path;
}

}  // namespace fs::data

#include "backend/inspect/sparse_mirror.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "backend/protocol/wire/sharded_index.h"
#include "backend/tensorfile/byte_io.h"
#include "backend/tensorfile/mapped_file.h"
#include "backend/tensorfile/zip_reader.h"

namespace fs::inspect {
namespace {

namespace tf = fs::tensorfile;
using Range = RangeSource::Range;

// The zip end records lie in the last 22 + 65535 (comment) + 20 (ZIP64 locator) + 56 bytes.
constexpr std::uint64_t kZipTail = 22 + 0xFFFF + 20 + 56;
// A local header's extra field is not in the central directory; torch.save pads
// data to 64 bytes with one, so this much past the name is read with the header.
constexpr std::uint64_t kExtraGuess = 128;
constexpr std::uint64_t kMaxIndexBytes = 64u << 20;  // a JSON index or safetensors header larger is refused

// NOTE [Indexes do not nest]
// A weight-map index names shard files, and our sharded index.json names rank files;
// the readers that open the mirror (tensorfile::WeightSet, CheckpointIndex) open each
// of those as a weight file, never as another index. The mirror decides by name (a
// ".json" file is an index) and used to follow an index named by an index, so one
// that named itself, or two that named each other, recursed until the stack or the
// file descriptors ran out. Now an index is never mirrored twice in one chain (the
// visited set, by lexically normal remote path: the error names the cycle) and the
// chain is at most kMaxIndexDepth long: 1, the top index alone, as the readers read
// no nested index; a cycle through a symlink the lexical path cannot see ends there
// too. Either error names the index and its entry.
constexpr std::size_t kMaxIndexDepth = 1;

bool isIndexName(const std::string& name) {
  return name.ends_with(".json");
}

// A file name taken from a remote index: a plain name inside its folder.
bool plainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::string baseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return plainName(name) ? name : "checkpoint";
}

// The key a local file is known by: gate() is given paths as the readers spelled them.
std::string localKey(const std::string& path) {
  return std::filesystem::path(path).lexically_normal().string();
}

std::string joinRemote(const std::string& dir, const std::string& name) {
  return dir.ends_with('/') ? dir + name : dir + "/" + name;
}

}  // namespace

struct MirrorFile {
  std::string remote;
  std::string local;
  std::uint64_t size = 0;
  int fd = -1;
  std::map<std::uint64_t, std::uint64_t> held;  // begin -> end: the ranges fetched, disjoint
};

struct SparseMirror::Impl {
  std::shared_ptr<RangeSource> source;
  MirrorOptions options;
  std::string remotePath;
  std::string localPath;
  std::string madeDir;  // a folder create() made, removed with the files
  std::vector<std::unique_ptr<MirrorFile>> files;
  std::map<std::string, MirrorFile*> byLocal;
  std::mutex mu;  // fetches and `held`
  std::atomic<std::uint64_t> fetched{0};
  std::uint64_t total = 0;
  std::vector<std::string> indexChain;  // remote indexes being read, outermost first (lexically normal)

  ~Impl() {
    for (auto& f : files) {
      if (f->fd >= 0) ::close(f->fd);
      ::unlink(f->local.c_str());
    }
    if (!madeDir.empty()) ::rmdir(madeDir.c_str());
  }

  std::string where(const MirrorFile& f) const { return source->describe(f.remote); }

  StatusOr<MirrorFile*> addFile(const std::string& remote, const std::string& local) {
    auto info = source->stat(remote);
    if (!info) return info.status();
    if (info->isDir)
      return Status::invalidArgument(source->describe(remote) + ": is a directory, not a file");
    auto f = std::make_unique<MirrorFile>();
    f->remote = remote;
    f->local = local;
    f->size = info->size;
    f->fd = ::open(local.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (f->fd < 0) return Status::ioError(local + ": cannot create: " + std::strerror(errno));
    if (::ftruncate(f->fd, static_cast<off_t>(f->size)) != 0) {
      const int err = errno;
      ::close(f->fd);
      ::unlink(local.c_str());
      return Status::ioError(local + ": cannot size to " + std::to_string(f->size) +
                             " bytes: " + std::strerror(err));
    }
    total += f->size;
    files.push_back(std::move(f));
    byLocal[localKey(local)] = files.back().get();
    return files.back().get();
  }

  // The parts of [begin, end) not yet held.
  static std::vector<Range> missing(const MirrorFile& f, std::uint64_t begin, std::uint64_t end) {
    std::vector<Range> out;
    end = std::min(end, f.size);
    auto it = f.held.upper_bound(begin);
    if (it != f.held.begin()) --it;
    for (std::uint64_t at = begin; at < end;) {
      while (it != f.held.end() && it->second <= at) ++it;
      if (it == f.held.end() || it->first >= end) {
        out.push_back({at, end - at});
        break;
      }
      if (it->first > at) out.push_back({at, it->first - at});
      at = it->second;
    }
    return out;
  }

  void hold(MirrorFile& f, std::uint64_t begin, std::uint64_t end) {
    auto it = f.held.upper_bound(begin);
    if (it != f.held.begin() && std::prev(it)->second >= begin) --it;
    while (it != f.held.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = f.held.erase(it);
    }
    f.held.emplace(begin, end);
  }

  // Fetches what `want` asks for and the file lacks. REQUIRES: mu held.
  Status fetchLocked(MirrorFile& f, const std::vector<Range>& want, bool chunked) {
    std::vector<Range> todo;
    for (const Range& r : want) {
      for (const Range& m : missing(f, r.offset, r.offset + r.length)) {
        if (!chunked) {
          todo.push_back(m);
          continue;
        }
        for (std::uint64_t at = 0; at < m.length; at += options.chunkBytes)
          todo.push_back({m.offset + at, std::min(options.chunkBytes, m.length - at)});
      }
    }
    std::uint64_t wanted = 0, done = 0;
    for (const Range& r : todo) wanted += r.length;
    // Chunked (a tensor's bytes): one request per chunk, so cancel and progress act
    // between them. Otherwise (index parts, small): one batch.
    const std::size_t step = chunked ? 1 : std::max<std::size_t>(todo.size(), 1);
    for (std::size_t first = 0; first < todo.size(); first += step) {
      if (options.cancel && options.cancel->load()) {
        return Status::cancelled(where(f) + ": fetching cancelled");
      }
      const std::vector<Range> batch(
          todo.begin() + static_cast<std::ptrdiff_t>(first),
          todo.begin() + static_cast<std::ptrdiff_t>(std::min(first + step, todo.size())));
      auto got = source->read(f.remote, batch);
      if (!got) return got.status();
      if (got->size() != batch.size()) {
        return Status::ioError(where(f) + ": asked for " + std::to_string(batch.size()) + " ranges, got " +
                               std::to_string(got->size()));
      }
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const std::string& bytes = (*got)[i];
        if (bytes.size() != batch[i].length) {
          return Status::ioError(where(f) + ": " + std::to_string(bytes.size()) + " bytes at offset " +
                                 std::to_string(batch[i].offset) + " where " +
                                 std::to_string(batch[i].length) +
                                 " were expected (the file changed while it was read?)");
        }
        for (std::size_t off = 0; off < bytes.size();) {
          const ssize_t n = ::pwrite(f.fd, bytes.data() + off, bytes.size() - off,
                                     static_cast<off_t>(batch[i].offset + off));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) return Status::ioError(f.local + ": cannot write: " + std::strerror(errno));
          off += static_cast<std::size_t>(n);
        }
        hold(f, batch[i].offset, batch[i].offset + batch[i].length);
        fetched += bytes.size();
        done += bytes.size();
      }
      if (options.progress) options.progress(done, wanted);
    }
    return Status::ok();
  }

  Status fetch(MirrorFile& f, const std::vector<Range>& want, bool chunked = false) {
    std::lock_guard<std::mutex> lock(mu);
    return fetchLocked(f, want, chunked);
  }

  StatusOr<std::string> readLocal(const MirrorFile& f, std::uint64_t offset, std::uint64_t length) const {
    std::string out(length, '\0');
    const ssize_t n = ::pread(f.fd, out.data(), length, static_cast<off_t>(offset));
    if (n < 0) return Status::ioError(f.local + ": cannot read back: " + std::strerror(errno));
    out.resize(static_cast<std::size_t>(n));
    return out;
  }

  Status mirrorZip(MirrorFile& f);
  Status mirrorSafetensors(MirrorFile& f);
  Status mirrorAny(const std::string& remote, const std::string& local);
  Status mirrorWeightIndex(MirrorFile& index, const std::string& remoteDir, const std::string& localDir);
  Status mirrorDirectory(const std::string& remote, const std::string& local);
  // A file `index` names in `entry`: refused when it is an index already being read or
  // one too deep (NOTE [Indexes do not nest]), else mirrored.
  Status mirrorNamed(const MirrorFile& index, const std::string& entry, const std::string& remote,
                     const std::string& local);
};

// Pushes an index onto Impl::indexChain for the lifetime of the guard.
class IndexChainGuard {
 public:
  IndexChainGuard(std::vector<std::string>& chain, std::string key) : chain_(chain) {
    chain_.push_back(std::move(key));
  }
  ~IndexChainGuard() { chain_.pop_back(); }
  IndexChainGuard(const IndexChainGuard&) = delete;
  IndexChainGuard& operator=(const IndexChainGuard&) = delete;

 private:
  std::vector<std::string>& chain_;
};

Status SparseMirror::Impl::mirrorNamed(const MirrorFile& index, const std::string& entry,
                                       const std::string& remote, const std::string& local) {
  const std::string name = remote.substr(remote.find_last_of('/') + 1);
  if (isIndexName(name)) {
    const std::string key = localKey(remote);
    const auto seen = std::find(indexChain.begin(), indexChain.end(), key);
    if (seen != indexChain.end()) {
      std::string cycle;
      for (auto it = seen; it != indexChain.end(); ++it) cycle += source->describe(*it) + " -> ";
      return Status::corruption(
          where(index) + ": " + entry + " names '" + name + "', " +
          (std::next(seen) == indexChain.end() ? "the index itself" : "an index already being read") +
          " (a cycle: " + cycle + source->describe(key) + ")");
    }
    if (indexChain.size() >= kMaxIndexDepth) {
      return Status::corruption(where(index) + ": " + entry + " names '" + name +
                                "', another index; indexes do not nest (the files an index names are "
                                "weight files: .safetensors, torch.save)");
    }
  }
  return mirrorAny(remote, local);
}

Status SparseMirror::Impl::mirrorZip(MirrorFile& f) {
  const std::uint64_t tail = std::min(f.size, kZipTail);
  if (Status st = fetch(f, {{f.size - tail, tail}}); !st) return st;
  auto mapped = tf::MappedFile::open(f.local);
  if (!mapped) return mapped.status();
  const std::string name = where(f);
  auto extent = tf::findZipDirectory(mapped->bytes(), name);
  if (!extent) return extent.status();
  if (Status st = fetch(f, {{extent->offset, extent->size}}); !st) return st;
  auto entries = tf::readZipDirectory(mapped->bytes(), name);
  if (!entries) return entries.status();
  // Local headers with a guess at their extra field, then what the guess missed
  // and every entry that is not a tensor storage ("<folder>/data/<key>").
  std::vector<Range> headers;
  for (const auto& e : *entries) headers.push_back({e.localHeaderOffset, 30 + e.name.size() + kExtraGuess});
  if (Status st = fetch(f, headers); !st) return st;
  std::vector<Range> rest;
  const auto bytes = mapped->bytes();
  for (const auto& e : *entries) {
    if (e.localHeaderOffset + tf::kZipLocalHeaderFixedSize > f.size) continue;  // ZipReader names it
    const std::uint64_t header =
        tf::zipLocalHeaderSize(bytes.subspan(e.localHeaderOffset, tf::kZipLocalHeaderFixedSize));
    rest.push_back({e.localHeaderOffset, header});
    const auto slash = e.name.find('/');
    const bool storage = slash != std::string::npos && e.name.compare(slash + 1, 5, "data/") == 0;
    if (!storage) rest.push_back({e.localHeaderOffset + header, e.compressedSize});
  }
  return fetch(f, rest);
}

Status SparseMirror::Impl::mirrorSafetensors(MirrorFile& f) {
  if (Status st = fetch(f, {{0, 8}}); !st) return st;
  auto head = readLocal(f, 0, 8);
  if (!head) return head.status();
  const auto n = tf::detail::readLE<std::uint64_t>(std::as_bytes(std::span(head->data(), head->size())), 0);
  if (!n || *n > kMaxIndexBytes) {
    return Status::corruption(where(f) + ": not a safetensors file (its header length " +
                              (n ? std::to_string(*n) : std::string("is missing")) + ")");
  }
  return fetch(f, {{8, *n}});  // a lying length is clipped here and named by the reader
}

Status SparseMirror::Impl::mirrorAny(const std::string& remote, const std::string& local) {
  auto f = addFile(remote, local);
  if (!f) return f.status();
  MirrorFile& file = *f.value();
  if (remote.ends_with(".json")) {
    if (file.size > kMaxIndexBytes)
      return Status::invalidArgument(where(file) + ": an index of " + std::to_string(file.size) +
                                     " bytes is too large");
    if (Status st = fetch(file, {{0, file.size}}); !st) return st;
    IndexChainGuard reading(indexChain, localKey(remote));
    const auto slash = remote.find_last_of('/');
    const auto localSlash = local.find_last_of('/');
    return mirrorWeightIndex(file, slash == std::string::npos ? "." : remote.substr(0, slash),
                             local.substr(0, localSlash));
  }
  if (Status st = fetch(file, {{0, std::min<std::uint64_t>(file.size, 2)}}); !st) return st;
  auto magic = readLocal(file, 0, 2);
  if (!magic) return magic.status();
  return *magic == "PK" ? mirrorZip(file) : mirrorSafetensors(file);
}

Status SparseMirror::Impl::mirrorWeightIndex(MirrorFile& index, const std::string& remoteDir,
                                             const std::string& localDir) {
  auto text = readLocal(index, 0, index.size);
  if (!text) return text.status();
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  const auto map = json.is_object() ? json.find("weight_map") : json.end();
  if (map == json.end() || !map->is_object())
    return Status::corruption(where(index) + ": no \"weight_map\" object");
  std::map<std::string, std::string> shards;  // file -> the first tensor that names it
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string() || !plainName(file.get<std::string>())) {
      return Status::corruption(where(index) + ": weight_map['" + tensor +
                                "'] is not a file name in its folder");
    }
    shards.emplace(file.get<std::string>(), tensor);
  }
  for (const auto& [shard, tensor] : shards) {
    if (Status st = mirrorNamed(index, "weight_map['" + tensor + "']", joinRemote(remoteDir, shard),
                                localDir + "/" + shard);
        !st) {
      return st;
    }
  }
  return Status::ok();
}

Status SparseMirror::Impl::mirrorDirectory(const std::string& remote, const std::string& local) {
  auto names = source->list(remote);
  if (!names) return names.status();
  const std::set<std::string> present(names->begin(), names->end());
  if (present.contains("index.json")) {
    auto index = addFile(joinRemote(remote, "index.json"), local + "/index.json");
    if (!index) return index.status();
    MirrorFile& f = *index.value();
    if (f.size > kMaxIndexBytes) return Status::invalidArgument(where(f) + ": too large for an index");
    if (Status st = fetch(f, {{0, f.size}}); !st) return st;
    auto text = readLocal(f, 0, f.size);
    if (!text) return text.status();
    if (text->find(protocol::kShardedFormatName) != std::string::npos) {
      auto record = protocol::decodeShardedIndex(*text);
      if (!record) return Status::corruption(where(f) + ": " + record.status().message());
      IndexChainGuard reading(indexChain, localKey(f.remote));
      for (std::size_t i = 0; i < record->files.size(); ++i) {
        const std::string& name = record->files[i];
        if (!plainName(name)) {
          return Status::corruption(where(f) + ": files names '" + name + "', not a file in this directory");
        }
        if (Status st = mirrorNamed(f, "files[" + std::to_string(i) + "]", joinRemote(remote, name),
                                    local + "/" + name);
            !st) {
          return st;
        }
      }
      return Status::ok();
    }
  }
  for (const std::string name : {"model.safetensors.index.json", "model.safetensors",
                                 "pytorch_model.bin.index.json", "pytorch_model.bin"}) {
    if (present.contains(name)) return mirrorAny(joinRemote(remote, name), local + "/" + name);
  }
  return Status::notFound(
      source->describe(remote) +
      ": no index.json, model.safetensors(.index.json) or pytorch_model.bin(.index.json)");
}

StatusOr<std::unique_ptr<SparseMirror>> SparseMirror::create(std::shared_ptr<RangeSource> source,
                                                             const std::string& remotePath,
                                                             const std::string& localDir,
                                                             MirrorOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->source = std::move(source);
  impl->options = std::move(options);
  impl->remotePath = remotePath;
  impl->localPath = localDir + "/" + baseName(remotePath);
  auto info = impl->source->stat(remotePath);
  if (!info) return info.status();
  Status st;
  if (info->isDir) {
    if (::mkdir(impl->localPath.c_str(), 0700) != 0) {
      return Status::ioError(impl->localPath + ": cannot create: " + std::strerror(errno));
    }
    impl->madeDir = impl->localPath;
    st = impl->mirrorDirectory(remotePath, impl->localPath);
  } else {
    st = impl->mirrorAny(remotePath, impl->localPath);
  }
  if (!st) return st;
  return std::unique_ptr<SparseMirror>(new SparseMirror(std::move(impl)));
}

SparseMirror::SparseMirror(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SparseMirror::~SparseMirror() = default;

const std::string& SparseMirror::localPath() const {
  return impl_->localPath;
}
const std::string& SparseMirror::remotePath() const {
  return impl_->remotePath;
}
std::uint64_t SparseMirror::bytesFetched() const {
  return impl_->fetched.load();
}
std::uint64_t SparseMirror::bytesTotal() const {
  return impl_->total;
}

DataGate SparseMirror::gate() {
  Impl* impl = impl_.get();
  return [impl](const std::string& file, std::uint64_t offset, std::uint64_t length) -> Status {
    auto it = impl->byLocal.find(localKey(file));
    if (it == impl->byLocal.end()) {  // every file an index opens on a mirror is the mirror's
      return Status::invalidArgument(file + ": not a file of the mirror of " +
                                     impl->source->describe(impl->remotePath));
    }
    if (offset + length > it->second->size) {
      return Status::corruption(impl->where(*it->second) + ": bytes [" + std::to_string(offset) + ", +" +
                                std::to_string(length) + ") lie past its end");
    }
    std::lock_guard<std::mutex> lock(impl->mu);
    return impl->fetchLocked(*it->second, {{offset, length}}, true);
  };
}

}  // namespace fs::inspect

#include "app/checkpoints/remote_checkpoint.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace fs::app {

using protocol::Status;
using protocol::StatusOr;

std::string HostRangeSource::describe(const std::string& path) const {
  return host_->name() + ":" + path;
}

StatusOr<inspect::RangeSource::Info> HostRangeSource::stat(const std::string& path) {
  auto info = host_->stat(path);
  if (!info.isOk()) return info.status();
  return Info{info->size, info->is_dir};
}

StatusOr<std::vector<std::string>> HostRangeSource::list(const std::string& dir) {
  auto entries = host_->list(dir);
  if (!entries.isOk()) return entries.status();
  std::vector<std::string> names;
  for (const auto& e : *entries) names.push_back(e.name);
  return names;
}

StatusOr<std::vector<std::string>> HostRangeSource::read(const std::string& path,
                                                         const std::vector<Range>& ranges) {
  std::vector<remote::ByteRange> asked;
  asked.reserve(ranges.size());
  for (const Range& r : ranges) asked.push_back({r.offset, r.length});
  return host_->readRanges(path, asked);
}

RemoteCheckpoint::~RemoteCheckpoint() {
  index_.reset();
  mirror_.reset();
  if (!folder_.empty()) ::rmdir(folder_.c_str());
}

StatusOr<std::unique_ptr<RemoteCheckpoint>> openRemoteCheckpoint(std::shared_ptr<remote::Host> host,
                                                                 const std::string& path,
                                                                 const std::string& cacheDir,
                                                                 inspect::MirrorOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(cacheDir, ec);
  if (ec) return Status::ioError(cacheDir + ": cannot create: " + ec.message());
  std::string folder = cacheDir + "/remote-XXXXXX";
  if (::mkdtemp(folder.data()) == nullptr)
    return Status::ioError(folder + ": cannot create: " + std::strerror(errno));
  std::unique_ptr<RemoteCheckpoint> ckpt(new RemoteCheckpoint());
  ckpt->folder_ = folder;
  ckpt->where_ = host->name() + ":" + path;
  auto mirror = inspect::SparseMirror::create(std::make_shared<HostRangeSource>(host), path, folder,
                                              std::move(options));
  if (!mirror.isOk()) return mirror.status();
  ckpt->mirror_ = std::move(mirror.value());
  auto index = inspect::CheckpointIndex::open(ckpt->mirror_->localPath(), {ckpt->mirror_->gate()});
  if (!index.isOk()) {
    // The mirror's local path in a reader's message means the remote file.
    std::string message = index.status().message();
    const std::string& local = ckpt->mirror_->localPath();
    for (auto at = message.find(local); at != std::string::npos; at = message.find(local, at + 1))
      message.replace(at, local.size(), ckpt->where_);
    return index.status().withMessage(message);
  }
  ckpt->index_.emplace(std::move(index.value()));
  return ckpt;
}

}  // namespace fs::app

#include "app/monitor/host_file_source.h"

#include <algorithm>
#include <cstring>

namespace fs::app {
namespace {

using protocol::Status;
using protocol::StatusOr;

std::string parentOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

HostFileSource::HostFileSource(remote::Host& host, std::string path) : host_(host), path_(std::move(path)) {}

std::string HostFileSource::describe() const {
  return host_.name() + ":" + path_;
}

StatusOr<SourceStat> HostFileSource::stat() {
  auto info = host_.stat(path_);
  if (info) {
    if (info->is_dir) return Status::ioError(describe() + " is a folder, not a file");
    return SourceStat{info->size, std::nullopt};
  }
  if (info.status().code() != Status::Code::kNotFound) return info.status();
  // As LocalFileSource: a missing file is waited for quietly, a missing folder reported.
  const std::string dir = parentOf(path_);
  auto parent = host_.stat(dir);
  if (parent && parent->is_dir) return Status::notFound(describe() + " does not exist");
  if (parent || parent.status().code() == Status::Code::kNotFound) {
    return Status::ioError("folder " + host_.name() + ":" + dir +
                           " does not exist (or is not a folder); waiting for it");
  }
  return parent.status();
}

StatusOr<std::size_t> HostFileSource::read(std::uint64_t offset, char* buf, std::size_t n) {
  auto bytes = host_.readFile(path_, offset, n);
  if (!bytes) return bytes.status();
  const std::size_t got = std::min(bytes->size(), n);
  std::memcpy(buf, bytes->data(), got);
  return got;
}

HostRunDir::HostRunDir(remote::Host& host, std::string dir) : host_(host), dir_(std::move(dir)) {}

std::string HostRunDir::describe() const {
  return host_.name() + ":" + dir_;
}

std::unique_ptr<ByteSource> HostRunDir::open(const std::string& relativePath) {
  return std::make_unique<HostFileSource>(host_, joinHostPath(dir_, relativePath));
}

StatusOr<std::vector<std::string>> HostRunDir::list(const std::string& relativeDir) {
  return listHostDir(host_, joinHostPath(dir_, relativeDir));
}

std::string joinHostPath(const std::string& dir, const std::string& relative) {
  if (relative.empty() || relative == ".") return dir;
  return dir.ends_with('/') ? dir + relative : dir + "/" + relative;
}

StatusOr<std::vector<std::string>> listHostDir(remote::Host& host, const std::string& dir) {
  auto entries = host.list(dir);
  if (!entries) return entries.status();
  std::vector<std::string> names;
  names.reserve(entries->size());
  for (const remote::FileInfo& e : *entries) names.push_back(e.name);
  return names;
}

namespace {

class SharedHostRunDir : public RunDirSource {
 public:
  SharedHostRunDir(std::shared_ptr<remote::Host> host, std::string dir)
      : host_(std::move(host)), dir_(*host_, std::move(dir)) {}
  std::string describe() const override { return dir_.describe(); }
  std::unique_ptr<ByteSource> open(const std::string& relativePath) override {
    return dir_.open(relativePath);
  }
  StatusOr<std::vector<std::string>> list(const std::string& relativeDir) override {
    return dir_.list(relativeDir);
  }

 private:
  std::shared_ptr<remote::Host> host_;  // before dir_: it borrows the Host
  HostRunDir dir_;
};

}  // namespace

std::shared_ptr<RunDirSource> hostRunDir(std::shared_ptr<remote::Host> host, std::string dir) {
  return std::make_shared<SharedHostRunDir>(std::move(host), std::move(dir));
}

}  // namespace fs::app

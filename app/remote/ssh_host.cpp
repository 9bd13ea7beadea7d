#include "app/remote/ssh_host.h"

namespace fs::app::remote {

using protocol::Status;
using protocol::StatusOr;

StatusOr<std::unique_ptr<SshHost>> SshHost::open(const std::string& destination, SshConfig config,
                                                 std::shared_ptr<Prompter> prompter) {
  auto spec = config.resolve(destination);
  if (!spec.isOk()) return spec.status();
  auto shared = std::make_shared<SshConfig>(std::move(config));
  HopResolver resolve = [shared](const std::string& hop) { return shared->resolve(hop); };
  return std::make_unique<SshHost>(destination, std::move(*spec), std::move(prompter), std::move(resolve));
}

SshHost::SshHost(std::string name, HostSpec spec, std::shared_ptr<Prompter> prompter, HopResolver resolve_hop)
    : name_(std::move(name)), connection_(std::move(spec), std::move(prompter), std::move(resolve_hop)) {}

Status SshHost::connect() {
  std::lock_guard<std::mutex> lock(mutex_);
  return connection_.connect();
}

void SshHost::disconnect() {
  std::lock_guard<std::mutex> lock(mutex_);
  connection_.disconnect();
}

StatusOr<CommandResult> SshHost::run(const std::vector<std::string>& argv, const ExecOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  return exec_.run(argv, options);
}

StatusOr<std::string> SshHost::readFile(const std::string& path, std::uint64_t offset, std::size_t max) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.readFile(path, offset, max);
}

StatusOr<std::vector<std::string>> SshHost::readRanges(const std::string& path,
                                                       const std::vector<ByteRange>& ranges) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.readRanges(path, ranges);
}

StatusOr<FileInfo> SshHost::stat(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.stat(path);
}

StatusOr<std::vector<FileInfo>> SshHost::list(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.list(dir);
}

Status SshHost::writeFileAtomic(const std::string& path, std::string_view bytes, std::uint32_t mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.writeFileAtomic(path, bytes, mode);
}

StatusOr<bool> SshHost::writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                          std::uint32_t mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.writeFileIfAbsent(path, bytes, mode);
}

Status SshHost::makeDirs(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.makeDirs(path);
}

Status SshHost::remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  return files_.remove(path);
}

}  // namespace fs::app::remote

#include "backend/export/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backend/protocol/wire/run_dir.h"

namespace fs::exporter {

namespace stdfs = std::filesystem;
using protocol::Status;

OutputFile::OutputFile(stdfs::path target, stdfs::path temp, std::FILE* file)
    : target_(std::move(target)), temp_(std::move(temp)), file_(file) {}

protocol::StatusOr<std::unique_ptr<OutputFile>> OutputFile::create(const stdfs::path& target) {
  const stdfs::path dir = target.has_parent_path() ? target.parent_path() : stdfs::path(".");
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec))
    return Status::notFound("cannot write " + target.string() + ": folder " + dir.string() +
                            " does not exist");
  const stdfs::path temp = dir / protocol::tempFileName(target.filename().string());
  std::FILE* file = std::fopen(temp.c_str(), "wbx");
  if (file == nullptr)
    return Status::ioError("cannot write " + target.string() + ": " + std::strerror(errno) +
                           " (creating a file in " + dir.string() + ")");
  return std::unique_ptr<OutputFile>(new OutputFile(target, temp, file));
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) {
    std::error_code ec;
    stdfs::remove(temp_, ec);
  }
}

Status OutputFile::write(std::string_view bytes) {
  if (bytes.empty()) return Status::ok();
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    return Status::ioError("cannot write " + target_.string() + ": " + std::strerror(errno));
  return Status::ok();
}

Status OutputFile::commit(bool replace) {
  const bool flushed = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed)
    return Status::ioError("cannot write " + target_.string() + ": " +
                           std::strerror(flushed ? errno : flush_errno));
  if (replace) {
    std::error_code ec;
    stdfs::rename(temp_, target_, ec);
    if (ec) return Status::ioError("cannot move the export into " + target_.string() + ": " + ec.message());
  } else {
    auto moved = protocol::renameNoReplace(temp_, target_);
    if (!moved) return moved.status();
    if (!*moved) return refuseExisting(target_, false);
  }
  committed_ = true;
  return protocol::fsyncDir(target_.has_parent_path() ? target_.parent_path() : stdfs::path("."));
}

Status refuseExisting(const stdfs::path& path, bool force) {
  std::error_code ec;
  if (force || !stdfs::exists(stdfs::symlink_status(path, ec))) return Status::ok();
  return Status::invalidArgument(path.string() + " exists; pass --force to replace it");
}

}  // namespace fs::exporter

#include "backend/tensorfile/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace fs::tensorfile {
namespace {

Status errnoStatus(const std::string& path, const char* what, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::notFound(std::move(msg));
  return Status::ioError(std::move(msg));
}

}  // namespace

StatusOr<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errnoStatus(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errnoStatus(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalidArgument(path + ": not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<std::size_t>(st.st_size);
  if (file.size_ > 0) {
    void* addr = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return errnoStatus(path, "cannot mmap", err);
    }
    file.data_ = static_cast<const std::byte*>(addr);
    file.mapped_ = true;
  }
  ::close(fd);  // the mapping keeps the file open
  return file;
}

void adviseWillNeed(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data()) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(bytes.data() + bytes.size());
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);  // a hint: errors ignored
}

void MappedFile::dropResidentPages() const {
  if (mapped_ && size_ > 0) ::madvise(const_cast<std::byte*>(data_), size_, MADV_DONTNEED);  // errors ignored
}

MappedFile MappedFile::fromBytes(std::string name, std::vector<std::byte> bytes) {
  MappedFile file;
  file.path_ = std::move(name);
  file.buffer_ = std::move(bytes);
  file.data_ = file.buffer_.data();
  file.size_ = file.buffer_.size();
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept {
  *this = std::move(other);
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    buffer_ = std::move(other.buffer_);  // a vector move keeps its heap block
    other.buffer_.clear();
  }
  return *this;
}

MappedFile::~MappedFile() {
  release();
}

void MappedFile::release() {
  if (mapped_ && data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
  buffer_.clear();
}

}  // namespace fs::tensorfile

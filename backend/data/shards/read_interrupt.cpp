#include "backend/data/shards/read_interrupt.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace fs::data {

ReadInterrupt::ReadInterrupt() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ReadInterrupt::~ReadInterrupt() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadInterrupt::trigger() {
  const std::uint64_t one = 1;
  while (fd_ >= 0 && ::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void ReadInterrupt::reset() {
  std::uint64_t count = 0;
  while (fd_ >= 0 && ::read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

bool ReadInterrupt::triggered() const {
  if (fd_ < 0) return false;
  pollfd p = {fd_, POLLIN, 0};
  while (::poll(&p, 1, 0) < 0 && errno == EINTR) {
  }
  return (p.revents & POLLIN) != 0;
}

}  // namespace fs::data

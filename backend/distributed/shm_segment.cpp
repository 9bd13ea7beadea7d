#include "backend/distributed/shm_segment.h"

#include <fcntl.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>

#include "backend/distributed/error_text.h"

namespace fs::distributed {

struct ShmSegment::Header {
  static constexpr uint64_t kMagic = 0x46534d53484d3031ull;  // "FSMSHM01"
  uint64_t magic;
  int32_t size;
  uint64_t arenaBytes;
  char nonce[64];
  alignas(64) std::atomic<uint32_t> epoch;
  std::atomic<uint32_t> sleepers;  // processes inside futex wait: notifyAll skips the syscall when 0
};

namespace {

constexpr size_t kSegmentAlign = 64;

size_t roundUp(size_t n) {
  return (n + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign;
}

[[noreturn]] void failErrno(const std::string& name, const std::string& call) {
  throw std::runtime_error("shared memory segment " + name + ": " + call +
                           " failed: " + std::strerror(errno));
}

}  // namespace

size_t ShmSegment::totalBytes(int size, uint64_t arenaBytes) {
  return roundUp(sizeof(Header)) + static_cast<size_t>(size) * (roundUp(sizeof(ShmRankControl)) + arenaBytes);
}

ShmSegment::ShmSegment(std::string name, int size, uint64_t arenaBytes, void* base, size_t bytes)
    : name_(std::move(name)), size_(size), arenaBytes_(arenaBytes), base_(base), bytes_(bytes) {}

ShmSegment::~ShmSegment() {
  ::munmap(base_, bytes_);
  unlink();  // a creator that fails before the others have mapped it leaves nothing in /dev/shm
}

std::unique_ptr<ShmSegment> ShmSegment::create(const std::string& name, int size, uint64_t arenaBytes,
                                               const std::string& nonce) {
  if (nonce.size() >= sizeof(Header::nonce)) throw std::invalid_argument("shm nonce too long");
  arenaBytes = roundUp(arenaBytes);
  const size_t bytes = totalBytes(size, arenaBytes);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) failErrno(name, "shm_open (create)");
  auto cleanUp = [&] {
    ::close(fd);
    ::shm_unlink(name.c_str());
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    cleanUp();
    errno = e;
    failErrno(name, "ftruncate to " + std::to_string(bytes) + " bytes");
  }
  if (const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    cleanUp();
    errno = rc;
    failErrno(name, "reserving " + std::to_string(bytes) + " bytes in /dev/shm (posix_fallocate)");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    cleanUp();
    errno = e;
    failErrno(name, "mmap");
  }
  ::close(fd);
  std::unique_ptr<ShmSegment> seg(new ShmSegment(name, size, arenaBytes, base, bytes));
  Header* h = new (base) Header{};
  h->size = size;
  h->arenaBytes = arenaBytes;
  std::memcpy(h->nonce, nonce.data(), nonce.size());
  for (int r = 0; r < size; ++r) new (&seg->control(r)) ShmRankControl{};
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = Header::kMagic;
  return seg;
}

std::unique_ptr<ShmSegment> ShmSegment::open(const std::string& name, int size, uint64_t arenaBytes,
                                             const std::string& nonce) {
  arenaBytes = roundUp(arenaBytes);
  const size_t bytes = totalBytes(size, arenaBytes);
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) failErrno(name, "shm_open");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    throw std::runtime_error("shared memory segment " + name + " has " + std::to_string(st.st_size) +
                             " bytes, expected " + std::to_string(bytes));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) failErrno(name, "mmap");
  std::unique_ptr<ShmSegment> seg(new ShmSegment(name, size, arenaBytes, base, bytes));
  seg->linked_ = false;  // the creator owns the name
  const Header& h = seg->header();
  std::atomic_thread_fence(std::memory_order_acquire);
  if (h.magic != Header::kMagic || h.size != size || h.arenaBytes != arenaBytes ||
      std::strncmp(h.nonce, nonce.c_str(), sizeof(h.nonce)) != 0) {
    throw std::runtime_error("shared memory segment " + name +
                             " belongs to another group (its header differs)");
  }
  return seg;
}

void ShmSegment::unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

ShmSegment::Header& ShmSegment::header() const {
  return *static_cast<Header*>(base_);
}

ShmRankControl& ShmSegment::control(int rank) const {
  auto* p = static_cast<uint8_t*>(base_) + roundUp(sizeof(Header)) +
            static_cast<size_t>(rank) * roundUp(sizeof(ShmRankControl));
  return *reinterpret_cast<ShmRankControl*>(p);
}

uint8_t* ShmSegment::arena(int rank) const {
  return static_cast<uint8_t*>(base_) + roundUp(sizeof(Header)) +
         static_cast<size_t>(size_) * roundUp(sizeof(ShmRankControl)) +
         static_cast<size_t>(rank) * arenaBytes_;
}

void ShmSegment::claim(int rank) {
  ShmRankControl& c = control(rank);
  c.pid = ::getpid();
  c.pidNamespace = currentPidNamespace();
}

uint32_t ShmSegment::epoch() const {
  return header().epoch.load();
}

void ShmSegment::notifyAll() {
  Header& h = header();
  h.epoch.fetch_add(1);
  if (h.sleepers.load() == 0) return;
  // Not FUTEX_PRIVATE: the sleepers are other processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h.epoch), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void ShmSegment::waitForChange(uint32_t seen, std::chrono::microseconds slice) {
  Header& h = header();
  h.sleepers.fetch_add(1);
  // The epoch is re-read by the kernel: a bump after `seen` was read returns at once.
  const timespec ts{static_cast<time_t>(slice.count() / 1000000),
                    static_cast<long>(slice.count() % 1000000) * 1000};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h.epoch), FUTEX_WAIT, seen, &ts, nullptr, 0);
  h.sleepers.fetch_sub(1);
}

uint64_t currentPidNamespace() {
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

namespace {

constexpr int kSpins = 4000;  // ~20-40 us of pause instructions before sleeping
constexpr auto kSleepSlice = std::chrono::milliseconds(100);

// A pid in our pid namespace that no longer runs (gone or a zombie).
bool processGone(int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

}  // namespace

std::optional<std::string> waitOnSegment(ShmSegment& seg, int myRank, const std::function<bool()>& ready,
                                         const std::function<std::string()>& describe,
                                         std::chrono::milliseconds timeout) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return std::nullopt;
    _mm_pause();
  }
  const uint64_t myPidNs = currentPidNamespace();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const uint32_t seen = seg.epoch();
    if (ready()) return std::nullopt;
    for (int r = 0; r < seg.size(); ++r) {
      const ShmRankControl& c = seg.control(r);
      if (r != myRank && c.pidNamespace == myPidNs && processGone(c.pid)) {
        return "rank " + std::to_string(r) + " (pid " + std::to_string(c.pid) +
               ") exited while this rank waited for " + describe();
      }
    }
    if (std::chrono::steady_clock::now() - start >= timeout) {
      return "timed out after " + secondsText(timeout) + " waiting for " + describe();
    }
    seg.waitForChange(seen, kSleepSlice);
  }
}

}  // namespace fs::distributed

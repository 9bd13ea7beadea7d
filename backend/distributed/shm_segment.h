// The shared memory that ranks on one node exchange collectives through
// (NOTE [Shared-memory transport] in shm_communicator.h): a POSIX shm
// segment holding one control block and one data arena per rank, and a
// group-wide futex word that every change bumps.
//
// Layout: [header][control of rank 0 .. size-1][arena of rank 0 .. size-1].
// A rank writes only its own control block and arena; it reads everyone's.
//
// Thread-safety: the atomics may be used from any thread of any process
// mapping the segment; the ShmSegment object itself is not shared.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace fs::distributed {

// Where rank r's publication number `seq` lies in its arena.
struct ShmDescriptor {
  uint64_t seq = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// How many publications a rank may have ahead of the slowest peer's
// completions (the descriptor ring's length).
inline constexpr uint64_t kShmDescriptors = 64;

struct alignas(64) ShmRankControl {
  std::atomic<uint64_t> published{0};  // publications made: seq of the next one
  std::atomic<uint64_t> completed{0};  // collectives this rank has finished reading
  int64_t pid = 0;
  uint64_t pidNamespace = 0;  // inode of /proc/self/ns/pid: pids compare only within one
  ShmDescriptor descriptors[kShmDescriptors];
};

class ShmSegment {
 public:
  // Creates (rank 0 of the group) or opens (the others) the segment named
  // `name` ("/fs-..."). `nonce` is written by the creator and checked by the
  // others, so a same-named segment of another host or an old run is never
  // taken for this one. Creating reserves the whole size up front
  // (posix_fallocate), so a full /dev/shm is an error here rather than a
  // SIGBUS at the first large collective. Throws std::runtime_error naming
  // the segment and the failing call.
  static std::unique_ptr<ShmSegment> create(const std::string& name, int size, uint64_t arenaBytes,
                                            const std::string& nonce);
  static std::unique_ptr<ShmSegment> open(const std::string& name, int size, uint64_t arenaBytes,
                                          const std::string& nonce);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Removes the name; the mappings stay valid until every process unmaps.
  void unlink();

  int size() const { return size_; }
  uint64_t arenaBytes() const { return arenaBytes_; }
  ShmRankControl& control(int rank) const;
  // Marks `rank`'s control block as this process's, so that peers waiting on it can tell when it dies.
  void claim(int rank);
  uint8_t* arena(int rank) const;

  // The group-wide change counter. A rank bumps it after each change of its
  // control block; waiters sleep on it (futex) instead of spinning.
  uint32_t epoch() const;
  void notifyAll();
  // Sleeps until the epoch differs from `seen` or `slice` passes.
  void waitForChange(uint32_t seen, std::chrono::microseconds slice);

 private:
  struct Header;
  ShmSegment(std::string name, int size, uint64_t arenaBytes, void* base, size_t bytes);
  static size_t totalBytes(int size, uint64_t arenaBytes);
  Header& header() const;

  std::string name_;
  int size_;
  uint64_t arenaBytes_;
  void* base_;
  size_t bytes_;
  bool linked_ = true;
};

// This process's pid namespace (inode of /proc/self/ns/pid), 0 if unknown.
uint64_t currentPidNamespace();

// Waits until `ready()` holds: spins briefly, then sleeps on the segment's
// epoch. Returns what went wrong instead, worded after "while this rank
// waited for " + describe(): a peer of `myRank` in this pid namespace that
// exited (noticed within 0.1 s), or `timeout` passing. nullopt: ready.
std::optional<std::string> waitOnSegment(ShmSegment& seg, int myRank, const std::function<bool()>& ready,
                                         const std::function<std::string()>& describe,
                                         std::chrono::milliseconds timeout);

}  // namespace fs::distributed

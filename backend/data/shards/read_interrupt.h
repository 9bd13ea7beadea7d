// Wakes shard reads that wait on a pipe command, so that a data worker being
// stopped never hangs on `pipe:ssh host cat x.tar` whose far end went quiet.
//
// An eventfd: trigger() makes it readable until reset(), and PipeStream polls
// it beside the command's stdout and stderr (NOTE [Pipe shards]). Local files
// are read without it (a regular file's read does not wait on anyone).
//
// Thread-safety: trigger() may be called from any thread at any time, also
// while another thread is blocked in a read that polls this interrupt;
// reset() only while no read polls it. Ownership: owns its descriptor.
#pragma once

namespace fs::data {

class ReadInterrupt {
 public:
  ReadInterrupt();
  ~ReadInterrupt();
  ReadInterrupt(const ReadInterrupt&) = delete;
  ReadInterrupt& operator=(const ReadInterrupt&) = delete;

  void trigger();
  void reset();
  bool triggered() const;
  // For poll(): readable once triggered. -1 if the eventfd could not be made
  // (then triggered() still works, but a blocked read is not woken).
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace fs::data

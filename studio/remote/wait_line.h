// WaitLine: the one updating line a `remote` command draws on stderr while it
// waits on the run (stop / kill / pause / resume / checkpoint waiting for the
// engine's control_ack): what it waits for, the time waited and the limit —
// only when stderr is a terminal, erased before the command's result.
// (A wait has no count to give a rate or an ETA from: the limit stands in.)
//
// Ownership: writes to the stream it is given, which must outlive it.
// Threads: the command's thread only.
#pragma once

#include <iosfwd>
#include <string>

namespace fs::studio::remote {

class WaitLine {
 public:
  // `enabled` false: every call is a no-op (stderr is not a terminal).
  WaitLine(std::ostream& os, bool enabled, std::string what, int limitS);
  ~WaitLine() { clear(); }
  WaitLine(const WaitLine&) = delete;
  WaitLine& operator=(const WaitLine&) = delete;

  // Draws the line for `elapsedS` seconds waited (the caller's clock).
  void update(double elapsedS);
  // Erases the line if one is drawn. Idempotent.
  void clear();

  // "waiting for the control_ack of stop (seq 3)  0:07 of 2:00" (no '\r', no escape).
  std::string text(double elapsedS) const;

 private:
  std::ostream& os_;
  bool enabled_;
  std::string what_;
  int limitS_;
  bool drawn_ = false;
};

}  // namespace fs::studio::remote

// ProgressLine: the one updating status line a long flamingo-train command
// draws on stderr while it works ("validate: 12/40 shards  3.1 shards/s  ETA
// 0:09"), and nothing at all when stderr is not a terminal, so pipes and logs
// stay clean (NOTE [Progress lines]).
//
// Ownership: writes to the stream it is given, which must outlive it.
// Threads: one thread at a time (the command's).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace fs::cli {

// NOTE [Progress lines]
// A line is drawn with '\r' and erased to the end with "\x1b[K", so it updates
// in place; finish() (or the destructor) erases it, leaving the terminal as the
// command's real output left it. Updates are throttled to one per 100 ms so a
// tight loop costs nothing and the terminal does not flicker. The clock is a
// function returning seconds so tests can drive it. Rate is done / elapsed
// since construction; ETA is what is left at that rate, shown only when the
// total is known. Byte counts show as MB and MB/s. The line goes to stderr:
// stdout carries the command's results. When both are the same terminal, a
// command calls clear() before writing a result line and registers stdout with
// setResults(), which is flushed before the next draw.
class ProgressLine {
 public:
  enum class Unit { kItems, kBytes };
  using Clock = std::function<double()>;  // seconds, monotonic

  static double steadySeconds();
  // "m:ss", or "h:mm:ss" from an hour on.
  static std::string formatDuration(double seconds);

  // `enabled` false: every call is a no-op (stderr is not a terminal).
  // `noun` names the items ("shards", "files"); unused for bytes.
  ProgressLine(std::ostream& os, bool enabled, std::string label, Unit unit = Unit::kItems,
               std::string noun = "items", Clock clock = steadySeconds);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Total items or bytes; 0 or less: unknown (no ETA).
  void setTotal(int64_t total) { total_ = total; }
  // `detail` (may be empty) follows the figures, e.g. "1200 documents".
  void update(int64_t done, const std::string& detail = "");
  // Draws "label: text" now, unthrottled: a phase without figures ("writing
  // out.pt") that the next update() or finish() replaces.
  void show(const std::string& text);
  // Erases the line if one was drawn, before the command writes a result line;
  // the next update() draws it again. Idempotent.
  void clear();
  // The same, at the end. The destructor calls it.
  void finish() { clear(); }
  // The stream the command's results go to (stdout): flushed before each draw,
  // so a result written after clear() lands before the line, not inside it.
  void setResults(std::ostream& results) { results_ = &results; }

  // The text update() would draw for these figures (no '\r', no escape).
  std::string text(int64_t done, double elapsedSeconds, const std::string& detail) const;

 private:
  std::ostream& os_;
  std::ostream* results_ = nullptr;
  bool enabled_;
  std::string label_;
  Unit unit_;
  std::string noun_;
  Clock clock_;
  double start_;
  double lastDraw_ = -1;
  int64_t total_ = 0;
  bool drawn_ = false;
};

}  // namespace fs::cli

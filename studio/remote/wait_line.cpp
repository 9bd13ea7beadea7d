#include "studio/remote/wait_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <utility>

#include "studio/remote/terminal_text.h"

namespace fs::studio::remote {

namespace {

// "m:ss".
std::string minutes(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace

WaitLine::WaitLine(std::ostream& os, bool enabled, std::string what, int limitS)
    : os_(os), enabled_(enabled), what_(std::move(what)), limitS_(limitS) {}

std::string WaitLine::text(double elapsedS) const {
  return "waiting for " + what_ + "  " + minutes(elapsedS) + " of " + minutes(limitS_);
}

void WaitLine::update(double elapsedS) {
  if (!enabled_) return;
  writeTerminalControl(os_, "\r");
  os_ << text(elapsedS);
  writeTerminalControl(os_, "\x1b[K");
  os_ << std::flush;
  drawn_ = true;
}

void WaitLine::clear() {
  if (!drawn_) return;
  writeTerminalControl(os_, "\r\x1b[K");
  os_ << std::flush;
  drawn_ = false;
}

}  // namespace fs::studio::remote

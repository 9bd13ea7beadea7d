#include "backend/cli/progress_line.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <utility>

namespace fs::cli {

namespace {

constexpr double kMinInterval = 0.1;  // seconds between draws: at most 10 a second

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1e6);
  return buf;
}

std::string rateText(double perSecond) {
  char buf[32];
  std::snprintf(buf, sizeof buf, perSecond >= 100 ? "%.0f" : "%.1f", perSecond);
  return buf;
}

}  // namespace

double ProgressLine::steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ProgressLine::ProgressLine(std::ostream& os, bool enabled, std::string label, Unit unit, std::string noun,
                           Clock clock)
    : os_(os),
      enabled_(enabled),
      label_(std::move(label)),
      unit_(unit),
      noun_(std::move(noun)),
      clock_(std::move(clock)),
      start_(enabled_ ? clock_() : 0) {}

ProgressLine::~ProgressLine() {
  finish();
}

std::string ProgressLine::formatDuration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

std::string ProgressLine::text(int64_t done, double elapsed, const std::string& detail) const {
  const bool bytes = unit_ == Unit::kBytes;
  std::string s = label_ + ": " + (bytes ? megabytes(static_cast<double>(done)) : std::to_string(done));
  if (total_ > 0) s += "/" + (bytes ? megabytes(static_cast<double>(total_)) : std::to_string(total_));
  s += bytes ? " MB" : " " + noun_;
  if (!detail.empty()) s += ", " + detail;
  if (elapsed > 0 && done > 0) {
    const double rate = static_cast<double>(done) / elapsed;
    s += "  " + (bytes ? rateText(rate / 1e6) + " MB/s" : rateText(rate) + " " + noun_ + "/s");
    if (total_ > 0 && done <= total_)
      s += "  ETA " + formatDuration(static_cast<double>(total_ - done) / rate);
  }
  return s;
}

void ProgressLine::update(int64_t done, const std::string& detail) {
  if (!enabled_) return;
  const double now = clock_();
  if (lastDraw_ >= 0 && now - lastDraw_ < kMinInterval) return;
  lastDraw_ = now;
  drawn_ = true;
  if (results_ != nullptr) results_->flush();
  os_ << '\r' << text(done, now - start_, detail) << "\x1b[K" << std::flush;
}

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  lastDraw_ = clock_();
  drawn_ = true;
  if (results_ != nullptr) results_->flush();
  os_ << '\r' << label_ << ": " << text << "\x1b[K" << std::flush;
}

void ProgressLine::clear() {
  if (!drawn_) return;
  drawn_ = false;
  os_ << "\r\x1b[K" << std::flush;
}

}  // namespace fs::cli

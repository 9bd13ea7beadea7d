// Helpers for the monitor tests: event lines from the protocol encoder, files written
// the way the engine writes them.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <QFile>
#include <QString>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/events.h"

namespace fs::app::testing {

inline std::filesystem::path fsPath(const QString& p) {
  return std::filesystem::path(QFile::encodeName(p).toStdString());
}

// A step event with the figures the monitor reads; `step` also seeds the values.
inline protocol::StepEvent stepBody(std::int64_t step) {
  protocol::StepEvent s;
  s.step = step;
  s.samples = {{"laion", step * 8}, {"mmc4", step * 4}};
  s.tokens = {{"laion", step * 256}, {"mmc4", step * 1024}};
  s.loss = {{"laion", 3.0 - 0.001 * static_cast<double>(step)}, {"mmc4", 2.5}};
  s.rank_loss = {{"laion", {2.9, 3.1}}};
  s.lr = 1e-4;
  s.grad_norm = 0.5;
  s.step_time_s = 1.0;
  s.data_time_s = 0.125;
  s.samples_per_s = {{"laion", 8.0}, {"mmc4", 4.0}};
  s.gates = {{0, 0.01, 0.02}, {4, 0.03, 0.04}};
  return s;
}

// The line for `body` with this seq and time (ends in '\n').
inline std::string line(std::uint64_t seq, const protocol::EventBody& body,
                        std::int64_t t_ms = 1717000000000) {
  return protocol::encodeEventLine(protocol::Event{seq, t_ms, body});
}

// Appends `text` with one write() on an O_APPEND descriptor, as the engine does.
inline bool appendText(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return done == text.size();
}

inline std::vector<std::uint64_t> iota(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = first; s <= last; ++s) out.push_back(s);
  return out;
}

}  // namespace fs::app::testing

// Pieces of the error messages every communicator writes. Internal to
// backend/distributed.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace fs::distributed {

// LibTorch's messages carry a C++ backtrace after this marker: keep what is before it.
inline std::string firstPart(std::string_view what) {
  return std::string(what.substr(0, what.find("\nException raised from")));
}

// "2 s", "0.5 s".
inline std::string secondsText(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

}  // namespace fs::distributed

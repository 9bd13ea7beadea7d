// Helpers shared by the libFuzzer targets in fuzz/: a check that fails the run
// with a message (libFuzzer saves the input), and scratch files for the parsers
// that read from a path (tokenizer files, a shard URL).
//
// Thread-safety: libFuzzer calls a target from one thread; these helpers keep
// per-process state (one scratch directory) and are not thread-safe.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>

namespace fs::fuzz {

// A property of the parser was violated: print and abort, so libFuzzer reports a
// crash and keeps the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "FUZZ PROPERTY VIOLATED: %s\n", what.c_str());
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// One scratch directory per process under $TMPDIR (removed at exit).
inline const std::filesystem::path& scratchDir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    std::filesystem::path d = base / ("fs-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratchDir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes `bytes` to scratchDir()/name (replacing it) and returns the path.
inline std::string writeScratch(const std::string& name, std::string_view bytes) {
  const std::filesystem::path p = scratchDir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

// Splits a fuzz input into two parts at the first occurrence of `sep` (the
// whole input and "" when absent): targets that read two files (vocab.json +
// merges.txt) take both from one input.
inline std::pair<std::string_view, std::string_view> splitAt(std::string_view input, std::string_view sep) {
  const auto at = input.find(sep);
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at), input.substr(at + sep.size())};
}

}  // namespace fs::fuzz

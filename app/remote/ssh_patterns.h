// OpenSSH's host patterns, shared by the ssh_config reader and the known_hosts
// lookup: `*` any run of characters, `?` one character (OpenSSH's match_pattern),
// and host names compared in lower case. Internal to fs_app_remote.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace fs::app::remote::patterns {

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// True when all of `s` matches `p`.
// NOTE [Linear glob]: on a mismatch only the last '*' seen takes one more
// character; earlier stars never need to (whatever they took, the last one can
// take instead). The recursive form tried every split for every star: a Host
// or known_hosts pattern of 40 '*' before an 'x' ran for minutes
// (fuzz/ssh_config_fuzzer.cpp). This is O(|s| * |p|) at worst.
inline bool globMatch(const char* s, const char* p) {
  const char* star = nullptr;    // the last '*' of p seen so far
  const char* resume = nullptr;  // where s stands after what that '*' took
  while (*s != '\0') {
    if (*p == '*') {
      star = p++;
      resume = s;
    } else if (*p != '\0' && (*p == '?' || *p == *s)) {
      ++p;
      ++s;
    } else if (star != nullptr) {
      p = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (*p == '*') ++p;
  return *p == '\0';
}

}  // namespace fs::app::remote::patterns

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
inline bool globMatch(const char* s, const char* p) {
  for (; *p != '\0'; ++p, ++s) {
    if (*p == '*') {
      for (const char* t = s;; ++t) {
        if (globMatch(t, p + 1)) return true;
        if (*t == '\0') return false;
      }
    }
    if (*s == '\0' || (*p != '?' && *p != *s)) return false;
  }
  return *s == '\0';
}

}  // namespace fs::app::remote::patterns

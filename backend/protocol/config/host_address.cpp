#include "backend/protocol/config/host_address.h"

#include <cctype>
#include <vector>

namespace fs::protocol {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isHex(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Four decimal numbers 0..255 (no leading zeros: 010 reads as octal to inet_aton).
bool isIpv4(std::string_view text, bool* unspecified) {
  const auto parts = split(text, '.');
  if (parts.size() != 4) return false;
  bool zero = true;
  for (const std::string_view p : parts) {
    if (p.empty() || p.size() > 3 || (p.size() > 1 && p[0] == '0')) return false;
    int value = 0;
    for (const char c : p) {
      if (!isDigit(c)) return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255) return false;
    if (value != 0) zero = false;
  }
  *unspecified = zero;
  return true;
}

bool isIpv6(std::string_view text, bool* unspecified) {
  if (text.size() < 2) return false;
  int groups = 0;
  bool zero = true;
  const std::size_t gap = text.find("::");
  if (gap != std::string_view::npos && text.find("::", gap + 1) != std::string_view::npos) return false;
  auto side = [&](std::string_view part, bool last) {
    if (part.empty()) return true;
    const auto pieces = split(part, ':');
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const std::string_view g = pieces[i];
      if (last && i + 1 == pieces.size() && g.find('.') != std::string_view::npos) {
        bool v4zero = false;
        if (!isIpv4(g, &v4zero)) return false;
        if (!v4zero) zero = false;
        groups += 2;
        continue;
      }
      if (g.empty() || g.size() > 4) return false;
      for (const char c : g) {
        if (!isHex(c)) return false;
        if (c != '0') zero = false;
      }
      ++groups;
    }
    return true;
  };
  if (gap == std::string_view::npos) {
    if (!side(text, true) || groups != 8) return false;
  } else {
    if (!side(text.substr(0, gap), false) || !side(text.substr(gap + 2), true) || groups > 7) return false;
  }
  *unspecified = zero;
  return true;
}

std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7f) {
    static const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
  }
  return std::string("'") + c + "'";
}

}  // namespace

std::string hostAddressProblem(std::string_view text) {
  if (text.empty()) return "it is empty";
  bool unspecified = false;
  if (isIpv4(text, &unspecified) || isIpv6(text, &unspecified)) {
    return unspecified ? "it is the unspecified address, which names no host to connect to" : "";
  }
  if (text.find(':') != std::string_view::npos)
    return "it is not a valid IPv6 address (no brackets, no zone)";
  bool numeric = true;
  for (const char c : text) {
    if (!isDigit(c) && c != '.') numeric = false;
  }
  if (numeric) return "it is not a valid IPv4 address (four numbers 0..255, no leading zeros)";
  std::string_view name = text;
  if (name.back() == '.') name.remove_suffix(1);
  if (name.size() > 253) return "a host name is at most 253 bytes";
  for (const std::string_view label : split(name, '.')) {
    if (label.empty()) return "it has an empty label (two dots, or a leading dot)";
    if (label.size() > 63) return "label '" + std::string(label) + "' is longer than 63 bytes";
    for (const char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
        return "label '" + std::string(label) + "' holds " + describe(c) +
               ", which a host name cannot (letters, digits and '-' only)";
      }
    }
    if (label.front() == '-' || label.back() == '-')
      return "label '" + std::string(label) + "' starts or ends with '-'";
  }
  return "";
}

}  // namespace fs::protocol

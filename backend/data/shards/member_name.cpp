#include "backend/data/shards/member_name.h"

namespace fs::data {

MemberName parseMemberName(std::string_view name) {
  size_t slash = name.rfind('/');
  MemberName out;
  if (slash == std::string_view::npos && name.starts_with("__") && name.ends_with("__")) {
    out.kind = MemberName::Kind::kMeta;
    return out;
  }
  std::string_view dir = slash == std::string_view::npos ? std::string_view() : name.substr(0, slash + 1);
  std::string_view base = name.substr(dir.size());
  size_t dot = base.find('.');
  std::string_view stem = base.substr(0, dot);
  if (dot == std::string_view::npos || dot == 0) return out;
  out.kind = MemberName::Kind::kField;
  out.key.assign(dir).append(stem);
  out.ext.assign(base.substr(dot + 1));
  // ASCII only: locale-independent, and UTF-8 bytes pass through untouched.
  for (char& c : out.ext)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool isUnsafeMemberName(std::string_view name) {
  if (name.empty() || name.front() == '/') return true;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace fs::data

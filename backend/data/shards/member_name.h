// How a tar member name maps onto a WebDataset key and extension, and which
// names are unsafe. Rules: NOTE [Sample grouping] in tar_samples.h.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace fs::data {

struct MemberName {
  enum class Kind { kField, kMeta, kNoExtension };
  Kind kind = Kind::kNoExtension;
  std::string key;  // "dir/a" (kField only)
  std::string ext;  // "b.jpg", lowercased ASCII, may be empty (kField only)
};

// "dir/a.b.JPG" -> {kField, "dir/a", "b.jpg"}; "a." -> {kField, "a", ""};
// "__key__" (no "/", starts and ends with "__") -> kMeta;
// "dir/a", ".a", "d/__key__" -> kNoExtension; "dir/__key__.txt" is a field.
MemberName parseMemberName(std::string_view name);

// Empty, absolute, or with a ".." component: never to be used as a path.
bool isUnsafeMemberName(std::string_view name);

}  // namespace fs::data

// Small helpers shared by cmdline_import.cpp and cmdline_export.cpp.
// Internal to backend/protocol.
#pragma once

#include <string>
#include <string_view>

#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/cmdline/cmdline_flags.h"
#include "backend/protocol/config/schema.h"

namespace fs::protocol::cmdline_detail {

// ------------------------------------------------------------------ helpers

inline bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
inline bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

inline std::string inQuotes(const std::string& s) {
  return "'" + s + "'";
}

inline std::string basename(const std::string& w) {
  const auto slash = w.rfind('/');
  return slash == std::string::npos ? w : w.substr(slash + 1);
}

inline bool isEnvAssignment(const std::string& w) {
  const auto eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (size_t i = 0; i < eq; ++i) {
    const char c = w[i];
    const bool ok =
        c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

inline bool isPython(const std::string& b) {
  if (!startsWith(b, "python")) return false;
  return std::all_of(b.begin() + 6, b.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// argparse: "-1" and "-.5" are values, not options.
inline bool isNegativeNumber(const std::string& w) {
  if (w.size() < 2 || w[0] != '-') return false;
  const std::string rest = w.substr(1);
  const auto dot = rest.find('.');
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string::npos) return digits(rest);
  return rest.size() > dot + 1 && digits(std::string_view(rest).substr(0, dot)) &&
         digits(std::string_view(rest).substr(dot + 1));
}

inline bool looksLikeOption(const std::string& w) {
  return w.size() > 1 && w[0] == '-' && !isNegativeNumber(w);
}

inline bool isProgram(const std::string& w) {
  const std::string b = basename(w);
  return b == "torchrun" || b == "srun" || isPython(b);
}

inline std::string displayValue(const EntrySpec& spec, const Value& v) {
  if (std::holds_alternative<std::string>(v)) return inQuotes(std::get<std::string>(v));
  if (std::holds_alternative<std::vector<std::string>>(v)) return "[" + valueToText(spec, v) + "]";
  return valueToText(spec, v);
}

inline Value fieldValue(RunConfig& c, const std::string& path) {
  auto ref = resolvePath(runConfigSchema(), &c, path);
  return ref->spec->get(ref->owner);
}

inline const SectionSpec& datasetSection() {
  return *runConfigSchema().find("data")->section->find("datasets")->section;
}

inline Problem warning(std::string path, std::string message, std::string fix = "") {
  return {Problem::Severity::kWarning, std::move(path), std::move(message), std::move(fix)};
}
inline Problem error(std::string path, std::string message, std::string fix = "") {
  return {Problem::Severity::kError, std::move(path), std::move(message), std::move(fix)};
}

}  // namespace fs::protocol::cmdline_detail

#include "ui/plots/curve_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace fs::ui {
namespace {

void appendCell(std::string* out, const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    *out += text;
    return;
  }
  *out += '"';
  for (char c : text) {
    if (c == '"') *out += '"';
    *out += c;
  }
  *out += '"';
}

void appendNumber(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "nan";
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  out->append(buffer, result.ptr);
}

// x is never NaN by contract; should one slip in, it still gets its row
// (NaN == NaN is false and the merge would never move past it).
bool sameX(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

std::string curvesToCsv(const std::string& x_header, const std::vector<CsvCurve>& curves) {
  std::string out;
  std::size_t points = 0;
  for (const auto& c : curves) points += std::min(c.x.size(), c.y.size());
  out.reserve(32 + points * 24);

  appendCell(&out, x_header);
  for (const auto& c : curves) {
    out += ',';
    appendCell(&out, c.name);
  }
  out += '\n';

  std::vector<std::size_t> next(curves.size(), 0);
  for (;;) {
    double row_x = std::numeric_limits<double>::infinity();
    bool any = false;
    for (std::size_t k = 0; k < curves.size(); ++k) {
      const auto& c = curves[k];
      if (next[k] < std::min(c.x.size(), c.y.size())) {
        row_x = any ? std::min(row_x, c.x[next[k]]) : c.x[next[k]];
        any = true;
      }
    }
    if (!any) break;
    appendNumber(&out, row_x);
    for (std::size_t k = 0; k < curves.size(); ++k) {
      const auto& c = curves[k];
      out += ',';
      if (next[k] < std::min(c.x.size(), c.y.size()) && sameX(c.x[next[k]], row_x))
        appendNumber(&out, c.y[next[k]++]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace fs::ui

// curvesToCsv: every point of several curves as one CSV table.
//
// Columns: x, then one y column per curve. Rows merge the curves by x: a row
// holds, for each curve whose next unwritten point sits at the row's x, that
// point's y, and an empty cell for the others. Curves sampled at the same x
// values therefore share rows; every point of every curve is written exactly
// once, in x order (a curve's repeated x values give repeated rows). NaN is
// written as "nan"; numbers use the shortest text that reads back exactly.
//
// Thread-safety: pure function over values; run it on a worker thread for
// large curves (10M points is ~300 MB of text).
#pragma once

#include <string>
#include <vector>

namespace fs::ui {

struct CsvCurve {
  std::string name;  // column header (quoted when it needs to be)
  std::vector<double> x;
  std::vector<double> y;  // same length as x
};

std::string curvesToCsv(const std::string& x_header, const std::vector<CsvCurve>& curves);

}  // namespace fs::ui

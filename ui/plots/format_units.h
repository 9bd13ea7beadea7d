// Human-readable figures shared by the monitor's views: bytes, counts, durations.
//
// Thread-safety: pure functions.
#pragma once

#include <QString>
#include <cstdint>

namespace fs::ui {

// Binary units, three significant digits: "512 B", "1.50 KiB", "12.3 GiB".
QString formatBytes(std::int64_t bytes);
// The same with `digits` (>= 3) significant digits: formatBytes(205'520'896, 4) is
// "196.0 MiB". Bytes under 1 KiB are whole numbers whatever `digits` is.
QString formatBytes(std::int64_t bytes, int digits);
// A plain number with `digits` significant digits, 'g' style (as QCustomPlot's
// default tick labels): "4.85", "0.001", "1e-05", "1.2e+06".
QString formatNumber(double value, int digits);
// Decimal suffixes for large counts: "950", "12.3 K", "1.35 M", "6.74 B".
QString formatCount(std::int64_t count);
// Whole seconds as h:mm:ss (hours unbounded: "27:03:04"); "-" for NaN or negative.
QString formatDuration(double seconds);
// Thousands separators in the C locale: "1,234,567".
QString formatInteger(std::int64_t value);

}  // namespace fs::ui

#include "app/history/reference_curve.h"

#include <QFile>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

namespace fs::app {
namespace {

using protocol::Status;

constexpr qint64 kMaxFileBytes = qint64(256) << 20;

// One line's fields. Double quotes group a field ("a,b") and "" inside
// quotes is a literal quote. nullopt for an unterminated quote.
std::optional<QStringList> splitFields(const QByteArray& line) {
  QStringList fields;
  QByteArray field;
  bool quoted = false;
  for (qsizetype i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields << QString::fromUtf8(field).trimmed();
      field.clear();
    } else {
      field += c;
    }
  }
  if (quoted) return std::nullopt;
  fields << QString::fromUtf8(field).trimmed();
  return fields;
}

// Decimal or scientific notation, "nan", "inf", "-inf" (any case).
std::optional<double> parseNumber(const QString& text) {
  std::string s = text.toStdString();
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Row {
  int line = 0;  // 1-based
  QStringList fields;
};

QString at(const QString& source, int line, int column, const QString& name) {
  return name.isEmpty()
             ? QStringLiteral("%1 line %2, column %3").arg(source).arg(line).arg(column)
             : QStringLiteral("%1 line %2, column %3 ('%4')").arg(source).arg(line).arg(column).arg(name);
}

Status error(const QString& message) {
  return Status::invalidArgument(message.toStdString());
}

}  // namespace

protocol::StatusOr<ReferenceCurveSet> parseReferenceCurves(const QByteArray& text, const QString& source,
                                                           const ReferenceCurveOptions& options) {
  QByteArray body = text;
  if (body.startsWith("\xEF\xBB\xBF")) body.remove(0, 3);
  QList<Row> rows;
  const QList<QByteArray> lines = body.split('\n');
  for (qsizetype i = 0; i < lines.size(); ++i) {
    QByteArray line = lines[i];
    if (line.endsWith('\r')) line.chop(1);
    if (line.trimmed().isEmpty()) continue;
    auto fields = splitFields(line);
    if (!fields)
      return error(QStringLiteral("%1 line %2: a double quote is not closed").arg(source).arg(i + 1));
    rows.append({static_cast<int>(i + 1), *fields});
  }
  if (rows.isEmpty()) {
    return error(
        QStringLiteral("%1: the file is empty; expected a header row (e.g. step,loss) and rows of numbers,"
                       " or x,y pairs")
            .arg(source));
  }

  ReferenceCurveSet set;
  set.source = source;
  // A header row holds no number at all; a row mixing names and numbers is
  // data with a typo, and gets the error that names the bad cell.
  bool header = true;
  for (const QString& f : rows.first().fields) header = header && !parseNumber(f);
  int xIndex = 0;
  QList<int> yIndexes;
  QStringList names;  // per column, for messages
  if (header) {
    const Row head = rows.takeFirst();
    set.columns = head.fields;
    names = head.fields;
    for (int c = 0; c < names.size(); ++c) {
      if (names[c].isEmpty())
        return error(QStringLiteral("%1 line %2: column %3 of the header has no name")
                         .arg(source)
                         .arg(head.line)
                         .arg(c + 1));
      const int first = static_cast<int>(names.indexOf(names[c]));
      if (first != c) {
        return error(QStringLiteral("%1 line %2: column name '%3' appears twice (columns %4 and %5)")
                         .arg(source)
                         .arg(head.line)
                         .arg(names[c])
                         .arg(first + 1)
                         .arg(c + 1));
      }
    }
    auto column = [&](const QString& name) -> protocol::StatusOr<int> {
      const int c = static_cast<int>(names.indexOf(name));
      if (c < 0)
        return error(QStringLiteral("%1: no column '%2' in the header (columns: %3)")
                         .arg(source, name, names.join(QStringLiteral(", "))));
      return c;
    };
    if (!options.xColumn.isEmpty()) {
      auto c = column(options.xColumn);
      if (!c.isOk()) return c.status();
      xIndex = c.value();
    }
    for (const QString& name : options.yColumns) {
      auto c = column(name);
      if (!c.isOk()) return c.status();
      if (c.value() == xIndex)
        return error(
            QStringLiteral("%1: column '%2' is the x column; it cannot also be a curve").arg(source, name));
      yIndexes << c.value();
    }
    if (options.yColumns.isEmpty()) {
      for (int c = 0; c < names.size(); ++c)
        if (c != xIndex) yIndexes << c;
    }
    if (yIndexes.isEmpty())
      return error(QStringLiteral("%1: the header names only the x column '%2'; there is no curve")
                       .arg(source, names[xIndex]));
    if (rows.isEmpty())
      return error(QStringLiteral("%1: no data rows after the header on line %2").arg(source).arg(head.line));
  } else {
    if (rows.first().fields.size() != 2) {
      return error(
          QStringLiteral("%1 line %2: no header row and %3 columns; a file without a header holds exactly two"
                         " columns, x and y")
              .arg(source)
              .arg(rows.first().line)
              .arg(rows.first().fields.size()));
    }
    if (!options.xColumn.isEmpty() || !options.yColumns.isEmpty()) {
      return error(QStringLiteral("%1: the file has no header row, so its columns cannot be chosen by name")
                       .arg(source));
    }
    names = {QString(), QString()};
    yIndexes = {1};
  }
  set.xName = header ? names[xIndex] : QStringLiteral("x");
  for (int c : yIndexes) set.curves.append({header ? names[c] : QStringLiteral("y"), {}, {}});

  const qsizetype width = names.size();
  std::optional<double> previousX;
  for (const Row& row : rows) {
    if (row.fields.size() != width) {
      return error(QStringLiteral("%1 line %2: %3 fields, expected %4%5")
                       .arg(source)
                       .arg(row.line)
                       .arg(row.fields.size())
                       .arg(width)
                       .arg(header ? QStringLiteral(" (as in the header)") : QStringLiteral(" (x,y)")));
    }
    const auto x = parseNumber(row.fields[xIndex]);
    if (!x || !std::isfinite(*x)) {
      return error(QStringLiteral("%1: x must be a finite number, got '%2'")
                       .arg(at(source, row.line, xIndex + 1, names[xIndex]), row.fields[xIndex]));
    }
    if (previousX && *x < *previousX) {
      return error(QStringLiteral("%1: x goes back from %2 to %3; the x column must not decrease")
                       .arg(at(source, row.line, xIndex + 1, names[xIndex]))
                       .arg(*previousX)
                       .arg(*x));
    }
    previousX = x;
    for (qsizetype k = 0; k < yIndexes.size(); ++k) {
      const int c = yIndexes[k];
      if (row.fields[c].isEmpty()) continue;  // no point of this curve at this x
      const auto y = parseNumber(row.fields[c]);
      if (!y) {
        return error(QStringLiteral("%1: '%2' is not a number")
                         .arg(at(source, row.line, c + 1, names[c]), row.fields[c]));
      }
      set.curves[k].x.push_back(*x);
      set.curves[k].y.push_back(*y);
    }
  }
  for (const ReferenceCurve& curve : set.curves) {
    if (curve.x.empty())
      return error(QStringLiteral("%1: column '%2' has no values").arg(source, curve.name));
  }
  return set;
}

protocol::StatusOr<ReferenceCurveSet> loadReferenceCurves(const QString& path,
                                                          const ReferenceCurveOptions& options) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    return Status::ioError(QStringLiteral("%1: cannot read: %2").arg(path, f.errorString()).toStdString());
  if (f.size() > kMaxFileBytes) {
    return error(QStringLiteral("%1: %2 bytes is more than a reference curve file may hold (%3 bytes)")
                     .arg(path)
                     .arg(f.size())
                     .arg(kMaxFileBytes));
  }
  const QByteArray text = f.readAll();
  if (f.error() != QFileDevice::NoError)
    return Status::ioError(QStringLiteral("%1: read failed: %2").arg(path, f.errorString()).toStdString());
  return parseReferenceCurves(text, path, options);
}

}  // namespace fs::app

#include "app/launch/output_lines.h"

namespace fs::app {
namespace {

QString decodeLine(QByteArray line) {
  if (line.endsWith('\r')) line.chop(1);
  return QString::fromUtf8(line);
}

}  // namespace

QStringList OutputLines::feed(const QByteArray& chunk) {
  QStringList lines;
  partial_.append(chunk);
  qsizetype start = 0;
  for (;;) {
    const qsizetype newline = partial_.indexOf('\n', start);
    const qsizetype end = newline < 0 ? partial_.size() : newline;
    if (end - start > maxLineBytes_) {
      lines << decodeLine(partial_.mid(start, maxLineBytes_));
      start += maxLineBytes_;
      continue;
    }
    if (newline < 0) break;
    lines << decodeLine(partial_.mid(start, newline - start));
    start = newline + 1;
  }
  partial_.remove(0, start);
  return lines;
}

QStringList OutputLines::flush() {
  if (partial_.isEmpty()) return {};
  QStringList lines{decodeLine(partial_)};
  partial_.clear();
  return lines;
}

}  // namespace fs::app

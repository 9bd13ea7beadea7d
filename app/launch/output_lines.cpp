#include "app/launch/output_lines.h"

namespace fs::app {
namespace {

QString decodeLine(const protocol::LineSplitter::Line& line, std::size_t maxLineBytes) {
  std::string_view text = line.text;
  if (!line.truncated && text.ends_with('\r')) text.remove_suffix(1);
  QString out = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
  if (line.truncated) out += QString::fromStdString(protocol::truncatedLineMark(maxLineBytes));
  return out;
}

}  // namespace

QStringList OutputLines::feed(const QByteArray& chunk) {
  QStringList out;
  lines_.feed(
      std::string_view(chunk.constData(), static_cast<std::size_t>(chunk.size())),
      [&](const protocol::LineSplitter::Line& line) { out << decodeLine(line, lines_.maxLineBytes()); });
  return out;
}

QStringList OutputLines::flush() {
  QStringList out;
  lines_.flush(
      [&](const protocol::LineSplitter::Line& line) { out << decodeLine(line, lines_.maxLineBytes()); });
  return out;
}

}  // namespace fs::app

// OutputLines: turns a process's output chunks into whole lines.
//
// Chunks split lines (and UTF-8 sequences) anywhere; a line is decoded only
// once its '\n' has arrived. "\r\n" ends a line like "\n". A line longer than
// maxLineBytes comes out once, cut there and marked (truncatedLineMark), and
// the rest of it is dropped up to its '\n', so a process that never writes a
// newline cannot make the buffer grow without bound (NOTE [Bounded lines] in
// backend/protocol/wire/line_splitter.h).
//
// Thread-safety: not thread-safe; one per stream.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

#include "backend/protocol/wire/line_splitter.h"

namespace fs::app {

class OutputLines {
 public:
  explicit OutputLines(qsizetype maxLineBytes = 64 * 1024) : lines_(static_cast<std::size_t>(maxLineBytes)) {}

  // The lines completed by `chunk`, in order, without their line ends.
  QStringList feed(const QByteArray& chunk);
  // The partial last line, if any, as a line (at the end of the stream).
  QStringList flush();
  // Bytes of the unfinished line held (at most maxLineBytes).
  qsizetype bufferedBytes() const { return static_cast<qsizetype>(lines_.bufferedBytes()); }

 private:
  protocol::LineSplitter lines_;
};

}  // namespace fs::app

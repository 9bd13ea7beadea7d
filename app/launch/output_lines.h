// OutputLines: turns a process's output chunks into whole lines.
//
// Chunks split lines (and UTF-8 sequences) anywhere; a line is decoded only
// once its '\n' has arrived. "\r\n" ends a line like "\n". A line longer than
// maxLineBytes is cut there, so a process that never writes a newline cannot
// make the buffer grow without bound.
//
// Thread-safety: not thread-safe; one per stream.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace fs::app {

class OutputLines {
 public:
  explicit OutputLines(qsizetype maxLineBytes = 64 * 1024) : maxLineBytes_(maxLineBytes) {}

  // The lines completed by `chunk`, in order, without their line ends.
  QStringList feed(const QByteArray& chunk);
  // The partial last line, if any, as a line (at the end of the stream).
  QStringList flush();

 private:
  qsizetype maxLineBytes_;
  QByteArray partial_;
};

}  // namespace fs::app

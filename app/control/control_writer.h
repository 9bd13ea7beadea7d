// ControlWriter: writes control files (protocol::issueControl) off the GUI thread.
//
// Internal to ControlClient, which owns one on a WorkerThread. write() arrives
// as a queued call and answers with written(), carrying the caller's ticket.
//
// Thread-safety: lives on its worker thread; holds no state between requests.
#pragma once

#include <QByteArray>
#include <QObject>
#include <QString>

namespace fs::app {

class ControlWriter : public QObject {
  Q_OBJECT
 public:
  explicit ControlWriter(QObject* parent = nullptr);

 public slots:
  // `verb` is a protocol::ControlVerb; `args` a JSON object's text.
  void write(quint64 ticket, const QString& runDir, int verb, const QByteArray& args);

 signals:
  // `error` empty: control/<seq>-<verb>.json is in place.
  void written(quint64 ticket, quint64 seq, const QString& error);
};

}  // namespace fs::app

// ControlWriter: writes control files (protocol::issueControl) off the GUI thread.
//
// Internal to ControlClient, which owns one on a WorkerThread. write() arrives
// as a queued call and answers with written(), carrying the caller's ticket.
//
// Thread-safety: lives on its worker thread; holds only the host to write on.
#pragma once

#include <QByteArray>
#include <QObject>
#include <QString>
#include <memory>

namespace fs::app {
namespace remote {
class Host;
}

class ControlWriter : public QObject {
  Q_OBJECT
 public:
  explicit ControlWriter(QObject* parent = nullptr);

 public:
  // Where later writes go: null = this machine's file system, else that host (SFTP).
  void setHost(std::shared_ptr<remote::Host> host) { host_ = std::move(host); }

 public slots:
  // `verb` is a protocol::ControlVerb; `args` a JSON object's text.
  void write(quint64 ticket, const QString& runDir, int verb, const QByteArray& args);

 signals:
  // `error` empty: control/<seq>-<verb>.json is in place.
  void written(quint64 ticket, quint64 seq, const QString& error);

 private:
  std::shared_ptr<remote::Host> host_;
};

}  // namespace fs::app

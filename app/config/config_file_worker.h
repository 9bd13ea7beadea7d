// ConfigFileWorker: YAML config files read and written off the GUI thread.
//
// Internal to ConfigDocument, which owns one on a WorkerThread: load() and
// save() arrive as queued calls, the *Finished signals carry the result back.
// Requests run one at a time in the order they were made. Every request
// carries the caller's ticket so the caller can match results to requests.
//
// Thread-safety: lives on its worker thread; holds no state between requests.
#pragma once

#include <QMetaType>
#include <QObject>
#include <QString>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app {

class ConfigFileWorker : public QObject {
  Q_OBJECT
 public:
  explicit ConfigFileWorker(QObject* parent = nullptr);

 public slots:
  void load(quint64 ticket, const QString& path);
  void save(quint64 ticket, const QString& path, const fs::protocol::RunConfig& config);

 signals:
  // `result.problems` holds the parse problems; the config is usable only when result.ok().
  void loadFinished(quint64 ticket, const QString& path, const fs::protocol::ConfigLoad& result);
  // `error` is empty on success.
  void saveFinished(quint64 ticket, const QString& path, const QString& error);
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::protocol::RunConfig)
Q_DECLARE_METATYPE(fs::protocol::ConfigLoad)

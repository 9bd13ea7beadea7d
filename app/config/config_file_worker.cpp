#include "app/config/config_file_worker.h"

#include <QFile>

namespace fs::app {

ConfigFileWorker::ConfigFileWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<fs::protocol::RunConfig>();
  qRegisterMetaType<fs::protocol::ConfigLoad>();
}

void ConfigFileWorker::load(quint64 ticket, const QString& path) {
  emit loadFinished(ticket, path, protocol::loadConfigFile(QFile::encodeName(path).toStdString()));
}

void ConfigFileWorker::save(quint64 ticket, const QString& path, const fs::protocol::RunConfig& config) {
  protocol::DumpOptions options;
  options.comments = true;  // a file people read: help text, units and allowed values beside each key
  const protocol::Status status =
      protocol::saveConfigFile(config, QFile::encodeName(path).toStdString(), options);
  emit saveFinished(ticket, path, status.isOk() ? QString() : QString::fromStdString(status.message()));
}

}  // namespace fs::app

#include "app/control/control_writer.h"

#include <QFile>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/control/remote_control.h"
#include "backend/protocol/wire/control_file.h"

namespace fs::app {

ControlWriter::ControlWriter(QObject* parent) : QObject(parent) {}

void ControlWriter::write(quint64 ticket, const QString& runDir, int verb, const QByteArray& args) {
  const auto controlVerb = static_cast<protocol::ControlVerb>(verb);
  nlohmann::json json = nlohmann::json::parse(args.toStdString(), nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    emit written(ticket, 0,
                 QStringLiteral("%1 command arguments are not a JSON object: %2")
                     .arg(QString::fromStdString(std::string(protocol::toString(controlVerb))),
                          QString::fromUtf8(args)));
    return;
  }
  const std::string dirName = QFile::encodeName(runDir).toStdString();
  auto issued = host_ ? issueRemoteControl(*host_, dirName, controlVerb, std::move(json))
                      : protocol::issueControl(std::filesystem::path(dirName), controlVerb, std::move(json));
  if (!issued) {
    emit written(ticket, 0, QString::fromStdString(issued.status().message()));
    return;
  }
  emit written(ticket, issued->seq, {});
}

}  // namespace fs::app

#include "app/checkpoints/inspector_results.h"

namespace fs::app {

QString StatsTarget::key() const {
  if (!tensors.empty()) {
    QStringList list;
    for (std::size_t i : tensors) list << QString::number(i);
    return QStringLiteral("l:%1:%2").arg(list.join(QLatin1Char(','))).arg(bins);
  }
  if (tensor) return QStringLiteral("t:%1:%2").arg(*tensor).arg(bins);
  return QStringLiteral("s:%1:%2:%3")
      .arg(QString::fromUtf8(inspect::sectionName(section).data(),
                             static_cast<qsizetype>(inspect::sectionName(section).size())),
           nodePath)
      .arg(bins);
}

QString StatsTarget::label(const CheckpointModel& model) const {
  if (!tensors.empty()) return QStringLiteral("%1 tensors").arg(tensors.size());
  if (tensor && *tensor < model.tensors.size()) return QString::fromStdString(model.tensors[*tensor].name);
  const QString section =
      QString::fromUtf8(inspect::sectionName(this->section).data(),
                        static_cast<qsizetype>(inspect::sectionName(this->section).size()));
  return nodePath.isEmpty() ? QStringLiteral("all %1 tensors").arg(section)
                            : QStringLiteral("%1 (%2)").arg(nodePath, section);
}

QString inspectorTaskName(InspectorTask task) {
  switch (task) {
    case InspectorTask::kOpen:
      return QStringLiteral("open");
    case InspectorTask::kStats:
      return QStringLiteral("statistics");
    case InspectorTask::kHashes:
      return QStringLiteral("hash check");
    case InspectorTask::kDiff:
      return QStringLiteral("diff");
    case InspectorTask::kListRun:
      return QStringLiteral("listing");
    case InspectorTask::kTrainingState:
      return QStringLiteral("training state");
  }
  return {};
}

}  // namespace fs::app

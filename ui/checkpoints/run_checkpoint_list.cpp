#include "ui/checkpoints/run_checkpoint_list.h"

#include <QDir>
#include <QFileInfo>

#include "ui/plots/format_units.h"

namespace fs::ui {

RunCheckpointList::RunCheckpointList(QWidget* parent) : QListWidget(parent) {
  setObjectName(QStringLiteral("runCheckpoints"));
  setToolTip(tr("Double-click a checkpoint to inspect it"));
  connect(this, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { emit inspectRequested(item->data(Qt::UserRole).toString()); });
}

void RunCheckpointList::reset(const QString& runDir) {
  runDir_ = runDir;
  clear();
}

void RunCheckpointList::add(const protocol::CheckpointEvent& event) {
  const QString path = pathOf(runDir_, QString::fromStdString(event.path));
  const auto kind = protocol::toString(event.kind);
  QString what = QString::fromUtf8(kind.data(), static_cast<qsizetype>(kind.size()));
  if (event.kind == protocol::CheckpointKind::kEpoch) what += QLatin1Char(' ') + QString::number(event.epoch);
  auto* item = new QListWidgetItem(tr("%1   %2, step %3, %4")
                                       .arg(QFileInfo(path).fileName(), what)
                                       .arg(event.step)
                                       .arg(formatBytes(event.bytes)));
  item->setData(Qt::UserRole, path);
  item->setToolTip(path);
  addItem(item);
}

QString RunCheckpointList::pathOf(const QString& runDir, const QString& eventPath) {
  if (QDir::isAbsolutePath(eventPath)) return eventPath;
  // A remote run as the Monitor names it, "host:/dir": joined as text (not this machine's path).
  const qsizetype colon = runDir.indexOf(QStringLiteral(":/"));
  if (colon > 0 && !runDir.left(colon).contains(QLatin1Char('/')))
    return runDir.left(colon + 1) + QDir::cleanPath(runDir.mid(colon + 1) + QLatin1Char('/') + eventPath);
  return QDir(runDir).absoluteFilePath(eventPath);
}

QString RunCheckpointList::pathAt(int row) const {
  const QListWidgetItem* it = item(row);
  return it ? it->data(Qt::UserRole).toString() : QString();
}

}  // namespace fs::ui

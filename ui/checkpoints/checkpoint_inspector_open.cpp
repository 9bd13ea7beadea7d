// The inspector's ways in from the desktop: its file dialogs, and drops of a
// local checkpoint file or directory (CheckpointInspector::droppedPath,
// acceptCheckpointDrops; declared in checkpoint_inspector.h).
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QMimeData>

#include "ui/checkpoints/checkpoint_inspector.h"

namespace fs::ui {
namespace {

const QString kCheckpointFilter =
    QObject::tr("Checkpoints (*.pt *.bin *.pth *.safetensors *.json);;All files (*)");

}  // namespace

void CheckpointInspector::chooseFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open checkpoint"), {}, kCheckpointFilter);
  if (!path.isEmpty()) openPath(path);
}

void CheckpointInspector::chooseDirectory() {
  const QString path = QFileDialog::getExistingDirectory(this, tr("Open checkpoint or run directory"));
  if (!path.isEmpty()) openPath(path);
}

void CheckpointInspector::chooseComparison() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Compare with checkpoint"), {}, kCheckpointFilter);
  if (!path.isEmpty()) compareWith(path);
}

QString CheckpointInspector::droppedPath(const QMimeData* mime) {
  if (!mime || !mime->hasUrls() || mime->urls().isEmpty()) return {};
  const QUrl url = mime->urls().front();
  return url.isLocalFile() ? url.toLocalFile() : QString();
}

namespace {

class DropFilter : public QObject {
 public:
  DropFilter(QWidget* target, std::function<void(const QString&)> open)
      : QObject(target), open_(std::move(open)) {}

 protected:
  bool eventFilter(QObject*, QEvent* event) override {
    if (event->type() == QEvent::DragEnter) {
      auto* e = static_cast<QDragEnterEvent*>(event);
      if (CheckpointInspector::droppedPath(e->mimeData()).isEmpty()) return false;
      e->acceptProposedAction();
      return true;
    }
    if (event->type() == QEvent::Drop) {
      auto* e = static_cast<QDropEvent*>(event);
      const QString path = CheckpointInspector::droppedPath(e->mimeData());
      if (path.isEmpty()) return false;
      e->acceptProposedAction();
      open_(path);
      return true;
    }
    return false;
  }

 private:
  std::function<void(const QString&)> open_;
};

}  // namespace

void acceptCheckpointDrops(QWidget* target, std::function<void(const QString& path)> open) {
  target->setAcceptDrops(true);
  target->installEventFilter(new DropFilter(target, std::move(open)));
}

}  // namespace fs::ui

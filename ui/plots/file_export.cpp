#include "ui/plots/file_export.h"

#include <QPromise>
#include <QSaveFile>
#include <QThreadPool>
#include <memory>

namespace fs::ui {

QFuture<QString> writeFileAsync(const QString& path, std::function<QByteArray()> produce) {
  // QThreadPool::start takes a copyable std::function; QPromise is move-only.
  auto promise = std::make_shared<QPromise<QString>>();
  QFuture<QString> future = promise->future();
  promise->start();
  QThreadPool::globalInstance()->start([promise, path, produce = std::move(produce)] {
    const QByteArray bytes = produce();
    QSaveFile file(path);
    QString error;
    if (!file.open(QIODevice::WriteOnly))
      error = QStringLiteral("cannot write %1: %2").arg(path, file.errorString());
    else if (file.write(bytes) != bytes.size() || !file.commit())
      error = QStringLiteral("writing %1 failed: %2").arg(path, file.errorString());
    promise->addResult(error);
    promise->finish();
  });
  return future;
}

}  // namespace fs::ui

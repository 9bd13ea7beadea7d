// writeFileAsync: produce bytes and write them to a file on a pool thread.
//
// The GUI thread renders what only it may touch (widgets, the curves' arrays)
// into values, then hands a producer over here: formatting (a 10M-point CSV)
// and the write itself run on QThreadPool::globalInstance(). The file is
// written through QSaveFile, so a failed export never leaves half a file in
// place of an older one.
//
// Thread-safety: call from any thread; `produce` runs on a pool thread and
// must own everything it uses (capture by value).
#pragma once

#include <QByteArray>
#include <QFuture>
#include <QString>
#include <functional>

namespace fs::ui {

// The future's result is "" on success, else a message naming the file.
QFuture<QString> writeFileAsync(const QString& path, std::function<QByteArray()> produce);

}  // namespace fs::ui

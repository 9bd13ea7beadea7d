// saveScreenshot: a widget's picture under <build>/tests/screenshots/, for
// people to look at (the tests never compare pixels).
#pragma once

#include <QDir>
#include <QString>
#include <QWidget>

namespace fs::ui {

inline bool saveScreenshot(QWidget& widget, const QString& name) {
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QDir().mkpath(dir);
  return widget.grab().save(dir + QLatin1Char('/') + name);
}

}  // namespace fs::ui

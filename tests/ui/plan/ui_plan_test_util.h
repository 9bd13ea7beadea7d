// Helpers of the planner's widget tests.
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QString>
#include <QTest>
#include <QWidget>

namespace fs::ui::test {

// A picture for people, beside main_window_test's in <build>/tests/screenshots.
inline void savePicture(QWidget* w, const QString& name) {
  QCoreApplication::sendPostedEvents();  // pending layouts, as before a paint
  const QString dir = QStringLiteral(FS_BINARY_DIR "/tests/screenshots");
  QVERIFY(QDir().mkpath(dir));
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name));
}

}  // namespace fs::ui::test

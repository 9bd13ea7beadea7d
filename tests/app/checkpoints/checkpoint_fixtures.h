// The inspect fixtures (tests/backend/inspect/make_checkpoints.py, written by
// the project's Python environment, FS_PYTHON) in a temporary directory, for the Qt tests of the
// checkpoint inspector. Header-only; shared with tests/ui/checkpoints.
#pragma once

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

namespace fs::test {

class CheckpointFixtures {
 public:
  // Runs make_checkpoints.py; ok() false (and error()) when it could not.
  CheckpointFixtures() {
    if (!dir_.isValid()) {
      error_ = QStringLiteral("no temporary directory");
      return;
    }
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(FS_PYTHON),
            {QStringLiteral(FS_SOURCE_DIR "/tests/backend/inspect/make_checkpoints.py"), dir_.path()});
    if (!p.waitForFinished(300000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
      error_ = QStringLiteral("make_checkpoints.py failed (needs " FS_PYTHON
                              " with torch: run scripts/install-deps.sh): ") +
               QString::fromLocal8Bit(p.readAll());
      return;
    }
    QFile f(path(QStringLiteral("expected.json")));
    if (!f.open(QIODevice::ReadOnly)) {
      error_ = QStringLiteral("no expected.json");
      return;
    }
    expected_ = QJsonDocument::fromJson(f.readAll()).object();
  }

  bool ok() const { return error_.isEmpty(); }
  const QString& error() const { return error_; }
  QString path(const QString& name) const { return QDir(dir_.path()).filePath(name); }
  const QJsonObject& expected() const { return expected_; }

 private:
  QTemporaryDir dir_;
  QString error_;
  QJsonObject expected_;
};

// Waits until `spy` holds a signal, also one emitted (on another thread)
// before the wait began, which QSignalSpy::wait() alone would miss; at most a minute.
inline bool waitForSignal(QSignalSpy& spy) {
  for (int i = 0; i < 6000 && spy.isEmpty(); ++i) spy.wait(10);
  return !spy.isEmpty();
}

}  // namespace fs::test

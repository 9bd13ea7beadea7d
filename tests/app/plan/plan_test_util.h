// Helpers of the planner tests (app and ui): the tiny preset, and the real
// `flamingo-train plan --json` run here, synchronously, with its JSON read
// by QJsonDocument alone, so the tests check the app's parse against an
// independent one. Blocking is fine in a test, never in the app.
#pragma once

#include <sys/stat.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>
#include <string>

#include "app/launch/engine_locator.h"
#include "app/plan/plan_request.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app::test {

inline EngineSearch testEngine() {
  return EngineSearch{{}, QStringLiteral(FS_TEST_FLAMINGO_TRAIN), {}};
}

inline QString tinyPresetFile() {
  return QStringLiteral(FS_SOURCE_DIR "/resources/presets/tiny.yaml");
}

inline protocol::RunConfig tinyPreset() {
  const auto load = protocol::loadConfigFile(tinyPresetFile().toStdString());
  if (!load.ok()) qFatal("tiny preset: %s", protocol::formatProblems(load.problems).c_str());
  return load.config;
}

// The CLI's plan of `configFile`; args after "--json", e.g. {"--world", "4"}.
inline QJsonObject cliPlan(const QString& configFile, const QStringList& args) {
  QProcess p;
  p.start(
      QStringLiteral(FS_TEST_FLAMINGO_TRAIN),
      QStringList{QStringLiteral("plan"), QStringLiteral("--config"), configFile, QStringLiteral("--json")} +
          args);
  if (!p.waitForFinished(120000) || p.exitCode() != 0) {
    qFatal("flamingo-train plan failed: %s", p.readAllStandardError().constData());
  }
  return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

// A request the real engine cannot finish: its config file is a FIFO in `dir`
// that nobody writes, so `plan` blocks in open() until it is killed, whatever
// the machine's speed. Empty configFile when the FIFO cannot be made.
inline PlanRequest blockedRequest(const QTemporaryDir& dir) {
  PlanRequest r;
  const QString fifo = dir.filePath(QStringLiteral("config.yaml"));
  if (mkfifo(QFile::encodeName(fifo).constData(), 0600) == 0) r.configFile = fifo;
  return r;
}

// True while `pid` exists, zombies included (/proc/<pid> stays until reaped).
inline bool processExists(qint64 pid) {
  return QFile::exists(QStringLiteral("/proc/%1").arg(pid));
}

}  // namespace fs::app::test

// Writes real run directories for the history tests, through the protocol
// library only: run.json with writeManifest, config.yaml with
// saveConfigFile, events.jsonl with the event encoder. Shared by the app and
// ui history tests.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>
#include <QtTest>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/protocol/wire/run_manifest.h"

namespace fs::test {

namespace proto = fs::protocol;

inline std::filesystem::path fsPath(const QString& p) {
  return std::filesystem::path(QFile::encodeName(p).toStdString());
}

// One event body and the time it is stamped with.
struct TimedEvent {
  std::int64_t t = 0;
  proto::EventBody body;
};

struct FixtureRun {
  proto::RunManifest manifest;
  proto::RunConfig config = proto::defaultRunConfig();
  std::vector<TimedEvent> events;
  std::string extraEventText;  // appended raw after the encoded events (bad lines, a partial line)
};

inline proto::RunManifest fixtureManifest(const std::string& id, std::int64_t created, proto::RunState state,
                                          std::vector<std::string> hosts = {"node-a"}) {
  proto::RunManifest m;
  m.run_id = id;
  m.engine_version = "0.1.0";
  m.created = created;
  m.nnodes = static_cast<int>(hosts.size());
  m.nproc_per_node = 2;
  m.world_size = m.nnodes * 2;
  m.hosts = std::move(hosts);
  m.state = state;
  m.updated = created + 60'000;
  return m;
}

inline proto::RunStartedEvent startedEvent(const std::string& id, std::int64_t totalSteps,
                                           std::vector<std::string> hosts = {"node-a"}) {
  proto::RunStartedEvent e;
  e.run_id = id;
  e.engine_version = "0.1.0";
  e.world_size = 2;
  e.nnodes = 1;
  e.hosts = std::move(hosts);
  e.config_hash = "fnv1a:0";
  e.total_steps = totalSteps;
  e.steps_per_epoch = totalSteps;
  e.datasets = {"laion", "mmc4"};
  return e;
}

inline proto::StepEvent stepEvent(std::int64_t step, double laion, double mmc4) {
  proto::StepEvent e;
  e.step = step;
  e.loss = {{"laion", laion}, {"mmc4", mmc4}};
  e.lr = 1e-4;
  e.step_time_s = 0.5;
  return e;
}

inline proto::CheckpointEvent checkpointEvent(std::int64_t step, proto::CheckpointKind kind) {
  proto::CheckpointEvent e;
  e.step = step;
  e.kind = kind;
  e.path = proto::checkpointFileName(kind, 0, step);
  e.bytes = 1000 + step;
  e.duration_s = 0.25;
  return e;
}

// Creates <root>/<name> and writes the run's files; returns its path.
inline QString writeRunDir(const QString& root, const QString& name, const FixtureRun& run) {
  const QString dir = QDir(root).filePath(name);
  const auto path = fsPath(dir);
  [&] {
    QVERIFY(proto::RunDir(path).create().isOk());
    const proto::Status m = proto::writeManifest(path, run.manifest);
    QVERIFY2(m.isOk(), m.message().c_str());
    const proto::Status c = proto::saveConfigFile(run.config, (path / proto::kConfigFileName).string());
    QVERIFY2(c.isOk(), c.message().c_str());
    proto::EventEncoder encoder;
    std::string text;
    for (const TimedEvent& e : run.events) text += encoder.encode(e.body, e.t);
    text += run.extraEventText;
    QFile f(QDir(dir).filePath(QStringLiteral("events.jsonl")));
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(text.data(), static_cast<qint64>(text.size())), static_cast<qint64>(text.size()));
  }();
  return dir;
}

// A finished run: started at `t0`, `steps` step events one second apart, a
// step checkpoint half way, a final checkpoint, run_finished ok.
inline FixtureRun finishedRun(const std::string& id, std::int64_t t0, int steps, double lr = 1e-4) {
  FixtureRun run;
  run.manifest = fixtureManifest(id, t0 - 500, proto::RunState::kFinished);
  run.config.name = id;
  run.config.optim.lr = lr;
  run.events.push_back({t0, startedEvent(id, steps)});
  for (int s = 1; s <= steps; ++s)
    run.events.push_back({t0 + s * 1000, stepEvent(s, 3.0 - 0.1 * s, 2.5 - 0.1 * s)});
  run.events.push_back(
      {t0 + (steps / 2) * 1000 + 1, checkpointEvent(steps / 2, proto::CheckpointKind::kStep)});
  run.events.push_back({t0 + steps * 1000 + 1, checkpointEvent(steps, proto::CheckpointKind::kFinal)});
  proto::RunFinishedEvent fin;
  fin.status = proto::FinishStatus::kOk;
  fin.steps = steps;
  fin.final_loss = {{"laion", 1.25}, {"mmc4", 0.75}};
  fin.duration_s = steps;
  run.events.push_back({t0 + steps * 1000 + 2, fin});
  return run;
}

}  // namespace fs::test

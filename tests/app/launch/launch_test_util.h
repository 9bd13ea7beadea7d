// Helpers shared by the launch and control tests: the run directory read the
// way every client reads it (protocol::EventDecoder), and the tiny preset.
// Reading happens on the test's thread: fine in a test, never in the app.
// The control tests' follower and acks are in tests/app/control/control_test_util.h.
#pragma once

#include <QFile>
#include <QString>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "backend/protocol/config/config_yaml.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"

namespace fs::app::test {

inline std::filesystem::path fsPath(const QString& p) {
  return std::filesystem::path(QFile::encodeName(p).toStdString());
}

// Every complete event in <runDir>/events.jsonl (none when it does not exist yet).
inline std::vector<protocol::Event> readEvents(const QString& runDir) {
  std::vector<protocol::Event> events;
  QFile file(QString::fromStdString(protocol::RunDir(fsPath(runDir)).eventsFile().string()));
  if (!file.open(QIODevice::ReadOnly)) return events;
  protocol::EventDecoder decoder;
  for (const auto& line : decoder.feed(file.readAll().toStdString())) {
    if (line.kind == protocol::DecodedLine::Kind::kEvent) events.push_back(line.event);
  }
  return events;
}

template <class Body>
std::vector<Body> eventsOf(const std::vector<protocol::Event>& events) {
  std::vector<Body> out;
  for (const auto& e : events) {
    if (const auto* b = std::get_if<Body>(&e.body)) out.push_back(*b);
  }
  return out;
}

// The tiny preset, loaded as the app's config form would hand it over.
inline protocol::RunConfig tinyConfig() {
  const auto load = protocol::loadConfigFile(std::string(FS_SOURCE_DIR) + "/resources/presets/tiny.yaml");
  if (!load.ok()) qFatal("tiny preset: %s", protocol::formatProblems(load.problems).c_str());
  return load.config;
}

}  // namespace fs::app::test

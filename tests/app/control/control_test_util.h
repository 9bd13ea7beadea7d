// Helpers of the control tests: a follower that passes acks and state events
// to a ControlClient, as the live monitor does, and acks as the engine writes
// them. Reading happens on the test's thread: fine in a test, never in the app.
#pragma once

#include <QFile>
#include <QObject>
#include <QString>
#include <QTimer>
#include <cstdint>
#include <functional>
#include <variant>
#include <vector>

#include "app/control/control_client.h"
#include "backend/protocol/wire/event_codec.h"
#include "backend/protocol/wire/run_dir.h"
#include "tests/app/launch/launch_test_util.h"

namespace fs::app::test {

// Follows events.jsonl by byte offset on a timer and hands each new
// control_ack and state event to `client`.
class EventFollower {
 public:
  EventFollower(QString runDir, ControlClient* client) : runDir_(std::move(runDir)), client_(client) {
    timer_.setInterval(50);
    QObject::connect(&timer_, &QTimer::timeout, [this] { poll(); });
    timer_.start();
  }
  const std::vector<protocol::Event>& events() const { return events_; }
  void poll() {
    QFile file(QString::fromStdString(protocol::RunDir(fsPath(runDir_)).eventsFile().string()));
    if (!file.open(QIODevice::ReadOnly) || !file.seek(static_cast<qint64>(offset_))) return;
    const QByteArray bytes = file.readAll();
    offset_ += static_cast<std::uint64_t>(bytes.size());
    for (const auto& line : decoder_.feed(bytes.toStdString())) {
      if (line.kind != protocol::DecodedLine::Kind::kEvent) continue;
      events_.push_back(line.event);
      if (const auto* ack = std::get_if<protocol::ControlAckEvent>(&line.event.body)) client_->onAck(*ack);
      if (const auto* state = std::get_if<protocol::StateEvent>(&line.event.body))
        client_->setRunState(state->state);
    }
  }
  template <class Body>
  bool has(const std::function<bool(const Body&)>& pred = [](const Body&) { return true; }) const {
    for (const auto& e : events_) {
      if (const auto* b = std::get_if<Body>(&e.body); b && pred(*b)) return true;
    }
    return false;
  }

 private:
  QString runDir_;
  ControlClient* client_;
  QTimer timer_;
  protocol::EventDecoder decoder_;
  std::uint64_t offset_ = 0;
  std::vector<protocol::Event> events_;
};

// A control_ack event as the engine writes it.
inline protocol::ControlAckEvent ack(quint64 seq, const char* verb, bool ok = true, std::int64_t step = 7,
                                     const char* message = "") {
  protocol::ControlAckEvent a;
  a.control_seq = seq;
  a.verb = verb;
  a.ok = ok;
  a.step = step;
  a.message = message;
  return a;
}

}  // namespace fs::app::test

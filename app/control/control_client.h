// ControlClient: sends control commands to one run and follows their answers.
//
// Commands are files written on a worker thread; acks come in through onAck().
// See NOTE [Control commands and acks] in control_client.cpp.
//
// Thread-safety: a QObject of the GUI thread; use it from that thread only.
// onAck takes a protocol struct: connect it directly (same thread), or
// register the type's meta type before queuing it.
#pragma once

#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QPair>
#include <QString>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/events.h"

class QTimer;

namespace fs::app {

namespace remote {
class Host;
}
class ControlWriter;
template <class Worker>
class WorkerThread;

// One command this client asked for.
struct ControlRequest {
  quint64 ticket = 0;  // this client's id for it, from 1
  protocol::ControlVerb verb = protocol::ControlVerb::kStop;
  quint64 seq = 0;       // seq of its control file; 0 until the file is written
  qint64 askedAtMs = 0;  // client clock when it was asked for
  bool isWritten() const { return seq != 0; }
};

// "stop", "kill", ... as QString.
QString verbName(protocol::ControlVerb verb);

class ControlClient : public QObject {
  Q_OBJECT
 public:
  using Clock = std::function<qint64()>;  // monotonic milliseconds
  static constexpr int kDefaultTimeoutMs = 10'000;

  explicit ControlClient(QObject* parent = nullptr);
  // `clock` replaces the monotonic system clock (tests); empty = that clock.
  explicit ControlClient(Clock clock, QObject* parent = nullptr);
  ~ControlClient() override;

  // The run to control; "" detaches. A different run forgets everything pending
  // and the derived state. With `host`, the run directory is on that machine and
  // control files are written there (remote_control.h); without, on this one.
  void setRunDir(const QString& runDir, std::shared_ptr<remote::Host> host = nullptr);
  QString runDir() const { return runDir_; }
  const std::shared_ptr<remote::Host>& host() const { return host_; }
  void setTimeoutMs(int ms) { timeoutMs_ = ms; }
  int timeoutMs() const { return timeoutMs_; }

  // Each asks for one command and returns its ticket, or 0 (and commandFailed)
  // when no run is set.
  // stop: finish the current step, save a checkpoint when `checkpoint`, exit.
  quint64 stop(bool checkpoint = true);
  quint64 kill();
  quint64 pause();
  quint64 resume();
  quint64 checkpoint();
  // Any verb with its arguments (a JSON object, see docs/run-directory.md).
  quint64 send(protocol::ControlVerb verb, const nlohmann::json& args = nlohmann::json::object());

  // Commands asked for and neither acknowledged, failed nor timed out; oldest first.
  const QList<ControlRequest>& pending() const { return pending_; }
  bool isPending(protocol::ControlVerb verb) const;
  // The derived state (see the file comment); nullopt until anything is known.
  std::optional<protocol::RunState> runState() const { return runState_; }
  bool isPaused() const { return runState_ == protocol::RunState::kPaused; }

 public slots:
  // A `control_ack` event of the run (any client's command). It completes the
  // request with its seq AND verb; an ack for that seq with another verb is not ours.
  void onAck(const fs::protocol::ControlAckEvent& ack);
  // A `state` event of the run, or what the launcher knows (started, exited).
  void setRunState(fs::protocol::RunState state);
  // Times out the commands asked for at least timeoutMs() ago.
  void checkTimeouts();

 signals:
  // The control file is in place; request.seq is set.
  void commandWritten(const fs::app::ControlRequest& request);
  // The engine answered: `ok` says whether it was carried out, `message` why not.
  void acknowledged(const fs::app::ControlRequest& request, bool ok, const QString& message, qint64 step);
  // No ack within timeoutMs(); the message says so and what may be wrong.
  void timedOut(const fs::app::ControlRequest& request, const QString& message);
  // The command could not be sent (no run, control file not written).
  void commandFailed(const fs::app::ControlRequest& request, const QString& message);
  void runDirChanged(const QString& runDir);
  void pendingChanged();
  void runStateChanged();

 private:
  void onWritten(quint64 ticket, quint64 seq, const QString& error);
  // Removes pending_[index] and emits acknowledged for it.
  void complete(qsizetype index, const protocol::ControlAckEvent& ack);
  void applyAckToState(const protocol::ControlAckEvent& ack);
  void setDerivedState(std::optional<protocol::RunState> state);

  Clock clock_;
  QString runDir_;
  std::shared_ptr<remote::Host> host_;
  int timeoutMs_ = kDefaultTimeoutMs;
  quint64 nextTicket_ = 1;
  QList<ControlRequest> pending_;
  // A command as acks name it: (seq, verb); see NOTE [Control commands and acks].
  using AckKey = QPair<quint64, int>;
  static AckKey keyOf(const ControlRequest& r) { return {r.seq, static_cast<int>(r.verb)}; }
  static std::optional<AckKey> keyOf(const protocol::ControlAckEvent& ack);

  QHash<AckKey, ControlRequest> timedOut_;  // a late ack still finds its request
  // Acks that no pending command matches yet: the ack can be read from
  // events.jsonl before the writer's answer reaches this thread.
  QHash<AckKey, protocol::ControlAckEvent> unmatchedAcks_;
  QList<AckKey> unmatchedOrder_;  // oldest first, to bound unmatchedAcks_
  std::optional<protocol::RunState> runState_;
  QTimer* timer_;
  std::unique_ptr<WorkerThread<ControlWriter>> writer_;
};

}  // namespace fs::app

Q_DECLARE_METATYPE(fs::app::ControlRequest)

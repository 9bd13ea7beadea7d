#include "app/control/control_client.h"

#include <QDeadlineTimer>
#include <QMetaObject>
#include <QTimer>
#include <algorithm>
#include <utility>

#include "app/common/worker_thread.h"
#include "app/control/control_writer.h"

// NOTE [Control commands and acks]
// A command is a file control/<seq>-<verb>.json in the run directory
// (backend/protocol/wire/control_file.h; written on a worker thread). The engine
// acts on it between steps and answers with a `control_ack` event carrying the
// seq and the verb; whoever follows events.jsonl (the live monitor) passes acks
// in through onAck() and `state` events through setRunState(). An ack is ours
// when both its seq and its verb are those of a command we wrote: seqs are
// claimed atomically (NOTE [Control seq claims] in control_file.h), but a
// client without claims (an older build) can still write another verb under
// our seq, and the engine then acts on and acknowledges both; matching the seq
// alone would report that command's outcome as ours. A command is pending from
// the moment it is asked for until its ack arrives; one without an ack within
// timeoutMs() (default 10 s, from the moment it was asked for) is dropped from
// the pending list with timedOut(). An ack that arrives after that still
// counts: acknowledged() is emitted then.
//
// Derived run state (for buttons): the last state given to setRunState, moved
// on by every successful ack, whichever client sent the command (pause ->
// paused, resume -> running, stop / kill -> stopping): acks and state events
// come from one file, in order, so the last word is the right one.
//
// Time comes from an injectable monotonic clock; a timer calls
// checkTimeouts() every 250 ms while something is pending, and tests with a
// fake clock call it themselves. Nothing here opens a dialog.

namespace fs::app {
namespace {

using protocol::ControlVerb;
using protocol::RunState;

constexpr int kCheckIntervalMs = 250;
constexpr qsizetype kMaxUnmatchedAcks = 256;

qint64 monotonicMs() {
  return QDeadlineTimer::current().deadline();
}

}  // namespace

QString verbName(ControlVerb verb) {
  const std::string_view name = protocol::toString(verb);
  return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

ControlClient::ControlClient(QObject* parent) : ControlClient(Clock{}, parent) {}

ControlClient::ControlClient(Clock clock, QObject* parent)
    : QObject(parent),
      clock_(clock ? std::move(clock) : Clock(monotonicMs)),
      timer_(new QTimer(this)),
      writer_(std::make_unique<WorkerThread<ControlWriter>>(new ControlWriter,
                                                            QStringLiteral("control-writer"))) {
  qRegisterMetaType<fs::app::ControlRequest>();
  timer_->setInterval(kCheckIntervalMs);
  connect(timer_, &QTimer::timeout, this, &ControlClient::checkTimeouts);
  connect(writer_->worker(), &ControlWriter::written, this, &ControlClient::onWritten);
}

// A command asked for just before closing is still written.
ControlClient::~ControlClient() {
  writer_->finishPending();
}

void ControlClient::setRunDir(const QString& runDir, std::shared_ptr<remote::Host> host) {
  if (runDir == runDir_ && host == host_) return;
  runDir_ = runDir;
  host_ = host;
  // Queued before any write for the new run, so the writer sees it first.
  ControlWriter* writer = writer_->worker();
  QMetaObject::invokeMethod(
      writer, [writer, host = std::move(host)]() mutable { writer->setHost(std::move(host)); },
      Qt::QueuedConnection);
  const bool hadPending = !pending_.isEmpty();
  pending_.clear();
  timedOut_.clear();
  unmatchedAcks_.clear();
  unmatchedOrder_.clear();
  timer_->stop();
  runState_.reset();
  emit runDirChanged(runDir_);
  if (hadPending) emit pendingChanged();
  emit runStateChanged();
}

quint64 ControlClient::stop(bool checkpoint) {
  return send(ControlVerb::kStop, nlohmann::json{{"checkpoint", checkpoint}});
}

quint64 ControlClient::kill() {
  return send(ControlVerb::kKill);
}

quint64 ControlClient::pause() {
  return send(ControlVerb::kPause);
}

quint64 ControlClient::resume() {
  return send(ControlVerb::kResume);
}

quint64 ControlClient::checkpoint() {
  return send(ControlVerb::kCheckpoint);
}

quint64 ControlClient::send(ControlVerb verb, const nlohmann::json& args) {
  ControlRequest request;
  request.verb = verb;
  request.askedAtMs = clock_();
  if (runDir_.isEmpty()) {
    emit commandFailed(request, QStringLiteral("cannot send %1: no run is attached").arg(verbName(verb)));
    return 0;
  }
  request.ticket = nextTicket_++;
  pending_.append(request);
  if (!timer_->isActive()) timer_->start();
  emit pendingChanged();
  QMetaObject::invokeMethod(writer_->worker(), "write", Qt::QueuedConnection, Q_ARG(quint64, request.ticket),
                            Q_ARG(QString, runDir_), Q_ARG(int, static_cast<int>(verb)),
                            Q_ARG(QByteArray, QByteArray::fromStdString(args.dump())));
  return request.ticket;
}

bool ControlClient::isPending(ControlVerb verb) const {
  for (const ControlRequest& r : pending_) {
    if (r.verb == verb) return true;
  }
  return false;
}

std::optional<ControlClient::AckKey> ControlClient::keyOf(const protocol::ControlAckEvent& ack) {
  ControlVerb verb;
  if (!protocol::parseEnum(ack.verb, &verb)) return std::nullopt;  // no command of ours has it
  return AckKey{ack.control_seq, static_cast<int>(verb)};
}

void ControlClient::onWritten(quint64 ticket, quint64 seq, const QString& error) {
  qsizetype index = -1;
  for (qsizetype i = 0; i < pending_.size(); ++i) {
    if (pending_[i].ticket == ticket) index = i;
  }
  if (index < 0) return;  // timed out meanwhile, or asked of a run no longer set
  if (!error.isEmpty()) {
    const ControlRequest request = pending_.takeAt(index);
    emit pendingChanged();
    emit commandFailed(request, QStringLiteral("cannot send %1: %2").arg(verbName(request.verb), error));
    return;
  }
  pending_[index].seq = seq;
  emit commandWritten(pending_[index]);
  const AckKey key = keyOf(pending_[index]);
  if (auto early = unmatchedAcks_.find(key); early != unmatchedAcks_.end()) {
    const protocol::ControlAckEvent ack = early.value();
    unmatchedAcks_.erase(early);
    unmatchedOrder_.removeOne(key);
    complete(index, ack);
  }
}

void ControlClient::onAck(const protocol::ControlAckEvent& ack) {
  applyAckToState(ack);
  const std::optional<AckKey> key = keyOf(ack);
  if (!key) return;
  for (qsizetype i = 0; i < pending_.size(); ++i) {
    if (pending_[i].isWritten() && keyOf(pending_[i]) == *key) {
      complete(i, ack);
      return;
    }
  }
  if (auto late = timedOut_.find(*key); late != timedOut_.end()) {
    const ControlRequest request = late.value();
    timedOut_.erase(late);
    emit acknowledged(request, ack.ok, QString::fromStdString(ack.message), ack.step);
    return;
  }
  // Maybe ours before the writer's answer arrives; otherwise another client's.
  const bool awaitingSeq =
      std::any_of(pending_.begin(), pending_.end(), [](const ControlRequest& r) { return !r.isWritten(); });
  if (!awaitingSeq) return;
  if (!unmatchedAcks_.contains(*key)) unmatchedOrder_.append(*key);
  unmatchedAcks_.insert(*key, ack);
  while (unmatchedOrder_.size() > kMaxUnmatchedAcks) unmatchedAcks_.remove(unmatchedOrder_.takeFirst());
}

void ControlClient::complete(qsizetype index, const protocol::ControlAckEvent& ack) {
  const ControlRequest request = pending_.takeAt(index);
  if (pending_.isEmpty()) timer_->stop();
  emit pendingChanged();
  emit acknowledged(request, ack.ok, QString::fromStdString(ack.message), ack.step);
}

void ControlClient::applyAckToState(const protocol::ControlAckEvent& ack) {
  if (!ack.ok) return;
  ControlVerb verb;
  if (!protocol::parseEnum(ack.verb, &verb)) return;
  if (runState_ && protocol::isTerminal(*runState_)) return;
  switch (verb) {
    case ControlVerb::kPause:
      setDerivedState(RunState::kPaused);
      break;
    case ControlVerb::kResume:
      setDerivedState(RunState::kRunning);
      break;
    case ControlVerb::kStop:
    case ControlVerb::kKill:
      setDerivedState(RunState::kStopping);
      break;
    case ControlVerb::kCheckpoint:
      break;
  }
}

void ControlClient::setRunState(protocol::RunState state) {
  setDerivedState(state);
}

void ControlClient::setDerivedState(std::optional<protocol::RunState> state) {
  if (state == runState_) return;
  runState_ = state;
  emit runStateChanged();
}

void ControlClient::checkTimeouts() {
  const qint64 now = clock_();
  QList<ControlRequest> expired;
  for (qsizetype i = 0; i < pending_.size();) {
    if (now - pending_[i].askedAtMs >= timeoutMs_) {
      expired.append(pending_.takeAt(i));
    } else {
      ++i;
    }
  }
  if (expired.isEmpty()) return;
  if (pending_.isEmpty()) timer_->stop();
  emit pendingChanged();
  const QString seconds = QString::number(timeoutMs_ / 1000.0, 'g', 3);
  const bool ended = runState_ && protocol::isTerminal(*runState_);
  for (const ControlRequest& r : expired) {
    QString message;
    if (!r.isWritten()) {
      message = QStringLiteral("%1 was not written within %2 s: %3/control does not respond")
                    .arg(verbName(r.verb), seconds, runDir_);
    } else {
      timedOut_.insert(keyOf(r), r);
      message = QStringLiteral("%1 (control file %2) was not acknowledged within %3 s: ")
                    .arg(verbName(r.verb), QString::fromStdString(protocol::controlFileName(r.seq, r.verb)),
                         seconds);
      message +=
          ended ? QStringLiteral("the run has ended")
                : QStringLiteral("the run may be in a long step or checkpoint, stuck, or no longer running");
    }
    emit timedOut(r, message);
  }
}

}  // namespace fs::app

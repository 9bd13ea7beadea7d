#include "backend/telemetry/control_inbox.h"

#include <sys/stat.h>

#include <utility>

namespace fs::telemetry {

using protocol::ControlCommand;
using protocol::ControlVerb;

ControlInbox::ControlInbox(protocol::RunDir run_dir, TelemetryEmitter& emitter,
                           std::int64_t attempt_started_ms, protocol::WriteEnv* env)
    : run_dir_(std::move(run_dir)), emitter_(emitter), env_(env), attempt_started_ms_(attempt_started_ms) {}

void ControlInbox::ackSeq(std::uint64_t seq, ControlVerb verb, bool ok, std::string message,
                          std::int64_t step) {
  protocol::ControlAckEvent ack;
  ack.control_seq = seq;
  ack.verb = std::string(protocol::toString(verb));
  ack.ok = ok;
  ack.message = std::move(message);
  ack.step = step;
  emitter_.emit(std::move(ack));
}

void ControlInbox::ack(const ControlCommand& command, bool ok, std::string message, std::int64_t step) {
  ackSeq(command.seq, command.verb, ok, std::move(message), step);
}

bool ControlInbox::isStale(const protocol::PendingControl& pending) const {
  if (pending.command.issued_at >= attempt_started_ms_) return false;
  struct stat st {};
  if (::stat(pending.path.c_str(), &st) != 0) return true;  // vanished: the client's word is all we have
  std::int64_t mtime_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return mtime_ms < attempt_started_ms_;
}

StatusOr<std::vector<ControlCommand>> ControlInbox::poll(std::int64_t step) {
  auto listing = protocol::listControl(run_dir_.root());
  if (!listing) return listing.status();
  const std::filesystem::path root = run_dir_.root();

  for (const auto& rejected : listing->rejected) {
    std::string name = rejected.path.filename().string();
    if (stuck_.count(name)) continue;
    std::string reason = rejected.reason.message();
    auto moved = protocol::moveControlToDone(root, rejected.path, env_);
    if (!moved) {
      stuck_.insert(name);
      reason += " (and it could not be moved to done/: " + moved.status().message() + ")";
    }
    auto parsed = protocol::parseControlFileName(name);
    if (parsed) {
      ackSeq(parsed->seq, parsed->verb, false, "rejected: " + reason, step);
    } else {
      emitter_.emit(
          protocol::WarningEvent{"control_rejected", "control file rejected: " + reason, std::nullopt});
    }
  }

  std::vector<ControlCommand> out;
  for (auto& pending : listing->pending) {
    std::string name = pending.path.filename().string();
    if (stuck_.count(name)) continue;
    const ControlCommand& cmd = pending.command;
    bool stale = isStale(pending);  // before the move: it reads the file's mtime
    auto moved = protocol::moveControlToDone(root, pending.path, env_);
    if (!moved) {
      stuck_.insert(name);
      ack(cmd, false, "not carried out: " + moved.status().message(), step);
      continue;
    }
    if (!handled_.insert({cmd.seq, cmd.verb}).second) {
      ack(cmd, false,
          "seq " + std::to_string(cmd.seq) + " " + std::string(protocol::toString(cmd.verb)) +
              " was already handled; this repeat is ignored",
          step);
      continue;
    }
    if (stale) {
      ack(cmd, false, std::string(kStaleCommandMessage), step);
      continue;
    }
    out.push_back(cmd);
  }
  return out;
}

}  // namespace fs::telemetry

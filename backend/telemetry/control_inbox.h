// ControlInbox: rank 0's side of control/<seq>-<verb>.json (docs/run-directory.md).
//
// poll() lists control/ (protocol::listControl), and for every file it finds:
//  - a valid, new command: moved to control/done/ first, then returned (ascending seq).
//    A crash between the move and acting on it loses the command rather than repeating
//    a stop or a checkpoint. The caller acts on it (on every rank, at the same step)
//    and acknowledges it with ack().
//  - a rejected file (bad name, not a regular file, too big, foreign owner, bad content,
//    seq differing from its name, a repeated seq): moved to done/ and, when its name
//    gives a seq, acknowledged `control_ack ok:false` with the reason; a file whose name
//    gives no seq gets a `warning` event (code `control_rejected`) instead.
//  - a stale command, issued before this attempt started (see NOTE [Stale commands]):
//    moved to done/, acknowledged ok:false "issued before this attempt started".
//  - a command (seq AND verb) this inbox already handled: moved to done/, acknowledged
//    ok:false. A file with a handled seq but another verb is a different command (two
//    unclaimed writers collided, NOTE [Control seq claims]) and is acted on like any.
// A file that cannot be moved is acknowledged ok:false once (when it names a seq) and
// then left alone, so it is never acted on twice and never reported in a loop.
//
// NOTE [Stale commands]
// A command is stale when its `issued_at` AND its file's modification time both lie
// before the attempt's start. issued_at comes from the client's clock (maybe a laptop,
// minutes off); the mtime is set where the file was written (this host or the file
// server), so a fresh command from a client whose clock runs late is still accepted,
// while commands left over from a crashed attempt are refused.
//
// Thread-safety: not thread-safe; rank 0's training thread owns the inbox.
// Ownership: borrows the emitter, which must outlive the inbox.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/control_file.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/telemetry/emitter.h"

namespace fs::telemetry {

inline constexpr std::string_view kStaleCommandMessage = "issued before this attempt started";

class ControlInbox {
 public:
  // `attempt_started_ms`: unix ms when this attempt (process start, or resume) began;
  // 0 for a run's first attempt, where no command can be stale.
  // `env`: where handled files are moved (io/write_env.h); null: the real file system. Must outlive this.
  ControlInbox(protocol::RunDir run_dir, TelemetryEmitter& emitter, std::int64_t attempt_started_ms,
               protocol::WriteEnv* env = nullptr);

  // Handles everything in control/ as the file comment says; returns the commands to
  // act on, ascending seq, each already in done/. `step` goes into the acks of rejected
  // files. IOError only when the run directory or control/ cannot be read at all.
  StatusOr<std::vector<protocol::ControlCommand>> poll(std::int64_t step);

  // Emits the `control_ack` for a command poll() returned.
  void ack(const protocol::ControlCommand& command, bool ok, std::string message, std::int64_t step);

  std::int64_t attemptStartedMs() const { return attempt_started_ms_; }

 private:
  void ackSeq(std::uint64_t seq, protocol::ControlVerb verb, bool ok, std::string message, std::int64_t step);
  bool isStale(const protocol::PendingControl& pending) const;

  protocol::RunDir run_dir_;
  TelemetryEmitter& emitter_;
  protocol::WriteEnv* env_;
  std::int64_t attempt_started_ms_;
  // (seq, verb) of the commands returned or refused by this inbox.
  std::set<std::pair<std::uint64_t, protocol::ControlVerb>> handled_;
  std::set<std::string> stuck_;  // names in control/ that could not be moved
};

}  // namespace fs::telemetry

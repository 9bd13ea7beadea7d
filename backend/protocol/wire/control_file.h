// Control commands: control/<seq>-<verb>.json, one file per command (docs/run-directory.md).
//
// A client (the GUI, `flamingo-train` subcommands, a shell user) drops a command file
// into the run's control/ directory; rank 0 lists pending commands between steps, acts
// on them in seq order, acknowledges each with a `control_ack` event and moves the file
// to control/done/. No network port is ever opened.
//
// NOTE [Control file safety]
//  - Writers create the file under a temporary name starting with '.', fsync it and
//    rename it into place without replacing anything, so the consumer never sees a
//    partial command and two clients picking the same seq cannot overwrite each other.
//  - Readers skip names starting with '.', and reject (report, never act on) names
//    that do not parse, symlinks, non-regular files, files larger than 64 KiB, content
//    whose seq/verb differ from its name, and files not owned by the run directory's
//    owner: control commands only come from the user who owns the run.
//
// NOTE [Control seq claims]
//  The name holds the verb, so "never replacing" alone does not stop two writers that
//  list control/ at the same moment from both taking seq N (one N-stop.json, one
//  N-pause.json): the engine used to refuse the second and clients matching acks by seq
//  alone reported the other command's outcome. A seq is therefore claimed first, by
//  creating the empty file control/.seq/<seq> exclusively (O_CREAT|O_EXCL here; over
//  SFTP app/control/remote_control.h uses Host::writeFileIfAbsent, a rename that never
//  replaces), trying seq+1 while the claim exists; only the writer holding the claim
//  writes control/<seq>-<verb>.json. That holds across threads, processes, machines
//  and the two transports, as both create in the same directory. The first candidate
//  is 1 + the highest seq named in control/, control/done/ or control/.seq/. Claims
//  are never removed (one empty file per command): deleting one would let a writer
//  that listed before the deletion take its seq again. A writer that dies between the
//  claim and the command leaves a gap; seqs are unique and increasing, not dense.
//  Clients without claims (older builds) can still collide with each other or with
//  a claiming writer; listControl then keeps both commands (see there) and acks carry
//  the verb, so a client matches its ack by seq AND verb.
//
// Thread-safety: stateless functions, safe from any thread. Several writers may issue
// commands concurrently; one consumer (rank 0) lists and moves them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/io/write_env.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/events.h"

namespace fs::protocol {

inline constexpr int kControlSchemaMajor = 1;
inline constexpr int kControlSchemaMinor = 0;
inline constexpr std::string_view kControlSchemaVersion = "1.0";
inline constexpr std::size_t kMaxControlFileBytes = 64u << 10;

enum class ControlVerb {
  kStop,        // finish the current step, save a checkpoint (args.checkpoint, default true), exit
  kKill,        // abort now, no checkpoint
  kPause,       // stop stepping after the current step; keep the process group alive
  kResume,      // continue after a pause
  kCheckpoint,  // save a step checkpoint after the current step, then continue
};
std::string_view toString(ControlVerb v);  // "stop", "kill", "pause", "resume", "checkpoint"
bool parseEnum(std::string_view text, ControlVerb* out);
std::string_view enumChoices(ControlVerb);

struct ControlCommand {
  std::uint64_t seq = 0;  // from 1, unique per run directory
  ControlVerb verb = ControlVerb::kStop;
  std::int64_t issued_at = 0;                      // unix ms
  std::string issuer;                              // user name of the client
  nlohmann::json args = nlohmann::json::object();  // verb-specific; always an object
  bool operator==(const ControlCommand&) const = default;
};

// "<seq>-<verb>.json", e.g. "3-pause.json".
std::string controlFileName(std::uint64_t seq, ControlVerb verb);
struct ControlFileName {
  std::uint64_t seq = 0;
  ControlVerb verb = ControlVerb::kStop;
};
// Parses a control file name (leading zeros allowed); InvalidArgument saying what is wrong.
StatusOr<ControlFileName> parseControlFileName(std::string_view name);

// JSON object ending in '\n': {"v", "seq", "verb", "issued_at", "issuer", "args"?}.
std::string encodeControl(const ControlCommand& c);
// Parses and checks a command; newer major `v` rejected, unknown fields ignored.
StatusOr<ControlCommand> decodeControl(std::string_view text, std::string_view source);

// The seq an entry of control/, control/done/ or control/.seq/ names: "<seq>-<verb>.json",
// the same with the ".<n>" suffix moveControlToDone may add, or a claim's bare decimal seq.
// nullopt for any other name (temporaries, notes, a seq out of range).
std::optional<std::uint64_t> seqOfControlEntry(std::string_view name);

// 1 + the highest seq named in control/, control/done/ or control/.seq/ (1 when there is
// none): the first candidate for a claim. Not a claim itself (NOTE [Control seq claims]).
StatusOr<std::uint64_t> nextControlSeq(const std::filesystem::path& run_dir);

// Claims the lowest seq >= `from` that nobody claimed, by creating control/.seq/<seq>
// exclusively (control/.seq/ is made when missing). Returns the seq now owned by the
// caller. REQUIRES: control/ exists.
StatusOr<std::uint64_t> claimControlSeq(const std::filesystem::path& run_dir, std::uint64_t from);

// Writes control/<seq>-<verb>.json atomically without replacing: false, and nothing
// written, when that name already exists. REQUIRES: control/ exists (RunDir::create).
StatusOr<bool> writeControlFile(const std::filesystem::path& run_dir, const ControlCommand& c);

// Issues a command: claims a seq (claimControlSeq from nextControlSeq), then writes the
// command; if an unclaimed writer (older build) took that very name, claims another.
// Returns the command as written.
StatusOr<ControlCommand> issueControl(const std::filesystem::path& run_dir, ControlVerb verb,
                                      nlohmann::json args = nlohmann::json::object());
StatusOr<ControlCommand> issueControl(const std::filesystem::path& run_dir, ControlVerb verb,
                                      nlohmann::json args, std::string issuer, std::int64_t issued_at_ms);

struct PendingControl {
  ControlCommand command;
  std::filesystem::path path;
};
struct RejectedControl {
  std::filesystem::path path;
  Status reason;  // names the file and why it is not acted on
};
struct ControlListing {
  std::vector<PendingControl> pending;    // ascending seq, then file name
  std::vector<RejectedControl> rejected;  // by file name
};
// Lists control/ (see NOTE [Control file safety]). A missing control/ is an empty listing.
// Two commands with one seq but different verbs (unclaimed writers colliding) are both
// pending, in file-name order; a second file with the same seq AND verb ("09-stop.json"
// beside "9-stop.json") is rejected as a repeat.
// IOError only when the run directory or control/ cannot be read at all.
StatusOr<ControlListing> listControl(const std::filesystem::path& run_dir);

// Moves a processed or rejected control file into control/done/ (created if needed),
// durably; a name already taken there gets a ".<n>" suffix. Returns the new path.
// `env`: where the changes go (io/write_env.h); null: the real file system.
StatusOr<std::filesystem::path> moveControlToDone(const std::filesystem::path& run_dir,
                                                  const std::filesystem::path& file, WriteEnv* env = nullptr);

// The effective user's login name (getpwuid), else $USER, else "uid<N>".
std::string currentUserName();

}  // namespace fs::protocol

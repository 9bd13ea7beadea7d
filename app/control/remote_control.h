// Control files written on a remote::Host: protocol::issueControl for a run directory
// that lives on another machine (SFTP), with the same names, seq claims and no-replace
// rule (NOTE [Control seq claims] in backend/protocol/wire/control_file.h).
//
// Blocks on the Host: call it on a worker thread (ControlWriter does).
// Thread-safety: stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "app/remote/remote_host.h"
#include "backend/protocol/wire/control_file.h"

namespace fs::app {

// 1 + the highest seq named in <runDir>/control/, control/done/ or control/.seq/ on `host`.
protocol::StatusOr<std::uint64_t> nextRemoteControlSeq(remote::Host& host, const std::string& runDir);

// Claims the lowest unclaimed seq >= `from` by writing control/.seq/<seq> on `host`
// without replacing (Host::writeFileIfAbsent); control/.seq/ is made when missing.
protocol::StatusOr<std::uint64_t> claimRemoteControlSeq(remote::Host& host, const std::string& runDir,
                                                        std::uint64_t from);

// Claims a seq, then writes control/<seq>-<verb>.json without replacing; claims another
// when an unclaimed writer (older build) took that very name. Returns the command as written.
protocol::StatusOr<protocol::ControlCommand> issueRemoteControl(
    remote::Host& host, const std::string& runDir, protocol::ControlVerb verb,
    nlohmann::json args = nlohmann::json::object());

}  // namespace fs::app

// Control files written on a remote::Host: protocol::issueControl for a run directory
// that lives on another machine (SFTP), with the same names, seqs and no-replace rule.
//
// Blocks on the Host: call it on a worker thread (ControlWriter does).
// Thread-safety: stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "app/remote/remote_host.h"
#include "backend/protocol/wire/control_file.h"

namespace fs::app {

// 1 + the highest seq named in <runDir>/control/ or control/done/ on `host`.
protocol::StatusOr<std::uint64_t> nextRemoteControlSeq(remote::Host& host, const std::string& runDir);

// Takes the next seq and writes control/<seq>-<verb>.json without replacing; retries with a
// fresh seq when another client took that one. Returns the command as written.
protocol::StatusOr<protocol::ControlCommand> issueRemoteControl(
    remote::Host& host, const std::string& runDir, protocol::ControlVerb verb,
    nlohmann::json args = nlohmann::json::object());

}  // namespace fs::app

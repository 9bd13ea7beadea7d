// config.yaml written into a run directory on a host (an SSH node, a SLURM
// login node): created owner-only (protocol::kConfigFileMode), because a
// pipe: command in it may carry a credential, and because a file made
// readable first and restricted after would be open to others in between.
//
// Thread-safety: as the Host's.
#pragma once

#include <string>
#include <string_view>

#include "app/remote/remote_host.h"
#include "backend/protocol/status.h"

namespace fs::app::cluster {

// Writes `yaml` to RUN_DIR/config.yaml atomically (replacing one there), mode 0600.
protocol::Status writeRunConfig(remote::Host& host, const std::string& runDir, std::string_view yaml);

}  // namespace fs::app::cluster

#include "app/launch/run_config_upload.h"

#include "backend/protocol/wire/run_dir.h"

namespace fs::app::cluster {

protocol::Status writeRunConfig(remote::Host& host, const std::string& runDir, std::string_view yaml) {
  std::string path = runDir;
  if (path.empty() || path.back() != '/') path += '/';
  path += protocol::kConfigFileName;
  return host.writeFileAtomic(path, yaml, protocol::kConfigFileMode);
}

}  // namespace fs::app::cluster

#include "app/control/remote_control.h"

#include <algorithm>
#include <chrono>

#include "backend/protocol/wire/run_dir.h"

namespace fs::app {

using protocol::Status;
using protocol::StatusOr;

namespace {

std::string controlDir(const std::string& runDir) {
  return (runDir.ends_with('/') ? runDir : runDir + "/") + std::string(protocol::kControlDirName);
}

}  // namespace

StatusOr<std::uint64_t> nextRemoteControlSeq(remote::Host& host, const std::string& runDir) {
  std::uint64_t highest = 0;
  const std::string dir = controlDir(runDir);
  for (const std::string& d : {dir, dir + "/" + std::string(protocol::kControlDoneDirName)}) {
    auto entries = host.list(d);
    if (!entries) {
      if (entries.status().code() == Status::Code::kNotFound) continue;
      return entries.status();
    }
    for (const auto& e : entries.value()) {
      if (e.is_dir || e.name.starts_with('.')) continue;
      // done/ may hold "<seq>-<verb>.json.<n>" for a name taken twice: the seq is what counts.
      std::string name = e.name;
      if (const auto json = name.find(".json"); json != std::string::npos) name.resize(json + 5);
      if (auto parsed = protocol::parseControlFileName(name)) highest = std::max(highest, parsed->seq);
    }
  }
  return highest + 1;
}

StatusOr<protocol::ControlCommand> issueRemoteControl(remote::Host& host, const std::string& runDir,
                                                      protocol::ControlVerb verb, nlohmann::json args) {
  protocol::ControlCommand c;
  c.verb = verb;
  c.issuer = protocol::currentUserName();
  c.issued_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  c.args = std::move(args);
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto seq = nextRemoteControlSeq(host, runDir);
    if (!seq) return seq.status();
    c.seq = seq.value();
    const std::string path = controlDir(runDir) + "/" + protocol::controlFileName(c.seq, verb);
    auto written = host.writeFileIfAbsent(path, protocol::encodeControl(c));
    if (!written) return written.status();
    if (written.value()) return c;
  }
  return Status::ioError(host.name() + ": cannot issue a control command in " + controlDir(runDir) +
                         ": every seq tried was taken by concurrent clients");
}

}  // namespace fs::app

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
  for (const std::string& d : {dir, dir + "/" + std::string(protocol::kControlDoneDirName),
                               dir + "/" + std::string(protocol::kControlClaimDirName)}) {
    auto entries = host.list(d);
    if (!entries) {
      if (entries.status().code() == Status::Code::kNotFound) continue;
      return entries.status();
    }
    for (const auto& e : entries.value()) {
      if (e.is_dir) continue;
      if (auto seq = protocol::seqOfControlEntry(e.name)) highest = std::max(highest, *seq);
    }
  }
  return highest + 1;
}

StatusOr<std::uint64_t> claimRemoteControlSeq(remote::Host& host, const std::string& runDir,
                                              std::uint64_t from) {
  const std::string claims = controlDir(runDir) + "/" + std::string(protocol::kControlClaimDirName);
  if (Status made = host.makeDirs(claims); !made.isOk()) return made;
  constexpr std::uint64_t kMaxTries = 1000;
  for (std::uint64_t seq = std::max<std::uint64_t>(from, 1); seq - from < kMaxTries; ++seq) {
    auto claimed = host.writeFileIfAbsent(claims + "/" + std::to_string(seq), "", 0600);
    if (!claimed) return claimed.status();
    if (claimed.value()) return seq;
  }
  return Status::ioError(host.name() + ": cannot claim a control seq in " + claims + ": seqs " +
                         std::to_string(from) + " to " + std::to_string(from + kMaxTries - 1) +
                         " are all claimed");
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
    auto next = nextRemoteControlSeq(host, runDir);
    if (!next) return next.status();
    auto seq = claimRemoteControlSeq(host, runDir, next.value());
    if (!seq) return seq.status();
    c.seq = seq.value();
    const std::string path = controlDir(runDir) + "/" + protocol::controlFileName(c.seq, verb);
    auto written = host.writeFileIfAbsent(path, protocol::encodeControl(c));
    if (!written) return written.status();
    if (written.value()) return c;
    // An unclaimed writer (an older build) wrote this very name: claim another seq.
  }
  return Status::ioError(host.name() + ": cannot issue a control command in " + controlDir(runDir) +
                         ": every seq tried was taken by concurrent clients");
}

}  // namespace fs::app

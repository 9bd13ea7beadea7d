// SshHost: the Host (remote_host.h) reached over SSH — one SshConnection (the
// session) and the parts that work on it, SshExec (commands, streams) and
// SftpFiles (files), all owned here, their calls serialised by a mutex (a
// libssh session is not thread-safe).
//
// Create it from a destination and the SshConfig it is resolved in; the
// connection is made by the first call (or connect()), which may ask the
// Prompter (host key, passphrase) on the calling thread.
//
// Thread-safety: every method may be called from any thread; calls wait for
// each other. connected() and name() do not wait.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "app/remote/prompter.h"
#include "app/remote/remote_host.h"
#include "app/remote/sftp_files.h"
#include "app/remote/ssh_config.h"
#include "app/remote/ssh_connection.h"
#include "app/remote/ssh_exec.h"

namespace fs::app::remote {

class SshHost : public Host {
 public:
  // Resolves `destination` ("alias", "host", "user@host:port") in `config`;
  // ProxyJump hops are resolved in the same config.
  static protocol::StatusOr<std::unique_ptr<SshHost>> open(const std::string& destination, SshConfig config,
                                                           std::shared_ptr<Prompter> prompter);
  SshHost(std::string name, HostSpec spec, std::shared_ptr<Prompter> prompter, HopResolver resolve_hop);

  // Connects now (a "test connection" button); the other calls connect on demand.
  protocol::Status connect();
  void disconnect();
  HostSpec spec() const { return connection_.spec(); }

  std::string name() const override { return name_; }
  bool connected() const override { return connection_.connected(); }
  protocol::StatusOr<CommandResult> run(const std::vector<std::string>& argv,
                                        const ExecOptions& options = {}) override;
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset,
                                           std::size_t max) override;
  protocol::StatusOr<std::vector<std::string>> readRanges(const std::string& path,
                                                          const std::vector<ByteRange>& ranges) override;
  protocol::StatusOr<FileInfo> stat(const std::string& path) override;
  protocol::StatusOr<std::vector<FileInfo>> list(const std::string& dir) override;
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes,
                                   std::uint32_t mode = 0644) override;
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode = 0644) override;
  protocol::Status makeDirs(const std::string& path) override;
  protocol::Status remove(const std::string& path) override;
  // A long-lived exec channel on this session (NOTE [Streams] in local_host.h);
  // its reads take the mutex only to poll the channel, never to wait.
  protocol::StatusOr<std::unique_ptr<CommandStream>> openStream(
      const std::vector<std::string>& argv) override;

 private:
  friend class SshStream;
  const std::string name_;
  std::mutex mutex_;
  // Under mutex_. The parts hold references to the connection (files_ also
  // to exec_): declared after what they refer to, they are destroyed first.
  SshConnection connection_;
  SshExec exec_{connection_};
  SftpFiles files_{connection_, exec_};
};

}  // namespace fs::app::remote

// SftpFiles: the SFTP part of the SSH transport — Host's file operations
// (remote_host.h) over one SFTP session on an SshConnection's session, opened
// on first use and reused until that session closes (the session's Endpoint
// frees it, first). Every call runs under the connection's watchdog; a failure
// of the session (not of the file) closes it, so that the next call reconnects
// (NOTE [Dead connections] in ssh_connection.h).
//
// Owned by SshHost beside the SshConnection and SshExec it holds references to
// (both outlive it); replacing a file falls back to `mv` through SshExec.
// Thread-safety: none; called on SshConnection's one thread (under SshHost's
// mutex). Every call blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "app/remote/remote_host.h"
#include "app/remote/ssh_connection.h"
#include "app/remote/ssh_exec.h"
#include "backend/protocol/status.h"

namespace fs::app::remote {

class SftpFiles {
 public:
  SftpFiles(SshConnection& connection, SshExec& exec) : connection_(connection), exec_(exec) {}
  SftpFiles(const SftpFiles&) = delete;
  SftpFiles& operator=(const SftpFiles&) = delete;

  // Host's file operations, connecting first when needed.
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset, std::size_t max);
  protocol::StatusOr<std::vector<std::string>> readRanges(const std::string& path,
                                                          const std::vector<ByteRange>& ranges);
  protocol::StatusOr<FileInfo> stat(const std::string& path);
  protocol::StatusOr<std::vector<FileInfo>> list(const std::string& dir);
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes, std::uint32_t mode);
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode);
  protocol::Status makeDirs(const std::string& path);
  protocol::Status remove(const std::string& path);

 private:
  protocol::StatusOr<bool> writeFile(const std::string& path, std::string_view bytes, std::uint32_t mode,
                                     bool replace);
  protocol::Status ensureSftp();
  protocol::Status sftpCall(const std::string& what, std::size_t bytes,
                            const std::function<protocol::Status(void* sftp, bool* io_failed)>& body);
  std::string label() const { return connection_.label(); }

  SshConnection& connection_;
  SshExec& exec_;
};

}  // namespace fs::app::remote

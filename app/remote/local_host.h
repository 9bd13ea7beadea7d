// LocalHost: the Host (remote_host.h) that is this machine — commands are
// started with posix_spawn, files are read and written with POSIX calls.
//
// The same launchers, SLURM client and followers that reach a cluster over SSH
// use it when the app runs on the login node itself, and the tests use it to
// drive real processes and files.
//
// run(): argv[0] is looked up in this process's PATH (a name with a '/' is
// used as it is); there is never a shell in between. A name found nowhere
// gives exit code 127 and "<name>: command not found" on stderr, as a login
// shell over SSH would. The command gets its own process group; a timeout or
// the cancel flag ends the whole group (SIGTERM, then SIGKILL after
// kStopGraceMs). Output past ExecOptions::max_output is read and dropped, and
// the kept part ends with a line that says so.
//
// Files: remove() takes a file or an empty directory; list() is sorted by name;
// writeFileAtomic() fsyncs the file, renames it over the path and fsyncs the
// directory. Messages start with "local: " and name the path or the command.
//
// NOTE [Streams]
// openStream() starts the command as run() does, keeps the write end of its stdin
// open (never writing to it) and reads its stdout as it comes. Destroying the
// stream closes stdin and stdout, so a command that exits on stdin EOF or SIGPIPE
// (flamingo-train stream) ends at once; one that does not gets 1 s, then SIGTERM
// and SIGKILL to its process group, as run() does. Over SSH (ssh_host.h) the same
// is a long-lived exec channel; closing it makes sshd close the command's pipes.
//
// Thread-safety: stateless; any thread may call any method at the same time.
#pragma once

#include "app/remote/remote_host.h"

namespace fs::app::remote {

class LocalHost final : public Host {
 public:
  // How long a timed-out or cancelled command has between SIGTERM and SIGKILL.
  static constexpr int kStopGraceMs = 2'000;

  std::string name() const override { return "local"; }
  bool connected() const override { return true; }

  protocol::StatusOr<CommandResult> run(const std::vector<std::string>& argv,
                                        const ExecOptions& options = {}) override;
  protocol::StatusOr<std::string> readFile(const std::string& path, std::uint64_t offset,
                                           std::size_t max) override;
  protocol::StatusOr<FileInfo> stat(const std::string& path) override;
  protocol::StatusOr<std::vector<FileInfo>> list(const std::string& dir) override;
  protocol::Status writeFileAtomic(const std::string& path, std::string_view bytes,
                                   std::uint32_t mode = 0644) override;
  protocol::StatusOr<bool> writeFileIfAbsent(const std::string& path, std::string_view bytes,
                                             std::uint32_t mode = 0644) override;
  protocol::Status makeDirs(const std::string& path) override;
  protocol::Status remove(const std::string& path) override;
  // NOTE [Streams]: stdin stays open and unwritten; stderr is read along and its
  // last 4 KiB end the error once stdout reaches EOF.
  protocol::StatusOr<std::unique_ptr<CommandStream>> openStream(
      const std::vector<std::string>& argv) override;
};

// The executable `name` names for this process: itself when it holds a '/',
// else the first executable file of that name in `path` (PATH's syntax; an
// empty entry is the current directory). Empty when there is none.
std::string findInPath(const std::string& name, const std::string& path);

}  // namespace fs::app::remote

// The `remote` subcommands, one file each (cmd_*.cpp). Each parses its own
// arguments (after the command word) and returns an exit code.
//
// Thread-safety: main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fs::studio::remote {

using Args = std::vector<std::string>;

int cmdHosts(const Args& args, std::ostream& out, std::ostream& err);
int cmdLs(const Args& args, std::ostream& out, std::ostream& err);
int cmdLaunch(const Args& args, std::ostream& out, std::ostream& err);
int cmdFollow(const Args& args, std::ostream& out, std::ostream& err);
// verb: stop, kill, checkpoint, pause, resume.
int cmdControl(const std::string& verb, const Args& args, std::ostream& out, std::ostream& err);
int cmdQueue(const Args& args, std::ostream& out, std::ostream& err);

}  // namespace fs::studio::remote

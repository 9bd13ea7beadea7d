// Checks of the fields a run directory is made from: `name`, `run_root` and
// `launch.remote_workdir`.
//
// NOTE [Run directory text]: a run directory is a path, but it reaches places
// that read text as more than a path. data.source generated used to turn it
// into a shard spec, where "::" splits a list and a "pipe:" part runs under
// /bin/sh -c (issue 42 item 1); the generated shards now travel as a list of
// file paths and are never read as a spec (backend/trainer/generated_data.h),
// and these checks keep the text out of such places anyway: a config from
// someone else must not be able to smuggle a shard spec, a command or a line
// break (a log line, an #SBATCH line, a shell script) through a name.
// Refused: "::", "pipe:" and control characters (bytes < 0x20 and 0x7f).
//
// NOTE [A run root under ~]: a remote run root is a path on the hosts, and a
// relative one starts at the login directory, where remote commands and SFTP
// start. Every remote command gets its arguments quoted (NOTE [Remote command
// lines]), so no shell ever expands a `~` in them: `~/runs` used to make a
// directory literally named `~`. hostRunRoot() reads "~" and "~/x" as a shell
// would (the login directory, x below it) before the path is used; "~user/x"
// names another user's home, which we do not look up, and is refused.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"
#include "backend/protocol/status.h"

namespace fs::protocol {

// Why `text` cannot be part of a run directory ("holds '::', ..."); empty when it can.
std::string runPathTextProblem(std::string_view text);

// `root` as a path on a remote host (NOTE [A run root under ~]): "~" is ".",
// "~/x" is "x" (both relative to the login directory), anything not starting
// with '~' is unchanged. InvalidArgument naming the value for "~user...".
StatusOr<std::string> hostRunRoot(std::string_view root);

// One error per field of `config` that a run directory is made from and that
// fails runPathTextProblem, naming the field and its value; and one for a
// launch.remote_workdir that hostRunRoot refuses.
std::vector<Problem> checkRunLocation(const RunConfig& config);

}  // namespace fs::protocol

// The options on one #SBATCH line, read as sbatch 22.05 reads them, so that
// the check of launch.slurm.extra_args sees what sbatch will do.
//
// NOTE [sbatch option parsing]: sbatch splits an #SBATCH line into words at
// blanks outside quotes (' and " both quote, '\' escapes the next character,
// an unquoted '#' starts a comment) and hands the words to getopt_long with
// its option table. getopt_long accepts short options attached or separate
// ("-D/x", "-D /x", "-HD/x"), long options as "--name=value" or "--name value"
// (required arguments only; an optional one takes "=value" only), and any
// unique prefix of a long name ("--chd=/x" is --chdir). An exact name wins
// over longer names it is a prefix of ("--export" is not --export-file).
// The table (kSbatchOptions in the .cpp) is sbatch's for SLURM 22.05
// (src/common/slurm_opt.c, the options sbatch sets). What this parser cannot
// place is refused, never guessed: a word that is not an option, an unknown
// or ambiguous name (an ambiguous prefix names the candidates), a '#'
// outside quotes, a missing value, "--" (end of options). A site's SPANK
// options are unknown here: edit the previewed script for those.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"

namespace fs::app::cluster {

struct SbatchOption {
  std::string name;     // the long name sbatch resolves it to: "chdir" for -D, --chd, --chdir
  std::string written;  // the word(s) as written, for messages: "-D/x", "--chd=/x"
  bool hasValue = false;
  std::string value;  // unquoted, as sbatch gets it
};

// The words of `line` as sbatch's #SBATCH reader splits and unquotes them;
// kInvalidArgument for an unterminated quote or an unquoted '#'.
protocol::StatusOr<std::vector<std::string>> sbatchWords(std::string_view line);

// The options of `line` (no "#SBATCH" prefix), in order; kInvalidArgument
// naming the word sbatch would not read as we do (see the NOTE).
protocol::StatusOr<std::vector<SbatchOption>> parseSbatchLine(std::string_view line);

// The names --export=VALUE sets or passes that could run code in the job's
// #!/bin/bash before our first line (BASH_ENV, ENV, BASH_FUNC_*, SHELLOPTS,
// BASHOPTS, PS4, LD_*), in order; empty when none. VALUE is split at every
// ',' (more finely than SLURM may, so nothing hides in a quoted part).
std::vector<std::string> unsafeExportNames(std::string_view value);

}  // namespace fs::app::cluster

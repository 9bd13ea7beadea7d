// OpenFlamingo command lines <-> RunConfig.
//
// Import reads a `torchrun ... train.py --flag value ...` line as people paste
// it (OpenFlamingo v2.0.x train.py flags, plus the older --c4_* names and
// --fsdp_cpu_offload) into a config; export writes a config as such a line.
// The flag <-> field table, what is ignored and what cannot be expressed are
// documented in docs/openflamingo-cmdline.md.
//
// NOTE [Command-line round trip]: export computes notExpressible by importing
// its own argv and comparing every schema field with the input, so the list
// is exact by construction: importOpenFlamingoArgs(export(c).argv).config == c
// if and only if export(c).notExpressible holds no error. Warnings in that
// list are things the line does say but train.py itself would reject or
// crash on (e.g. a single dataset: train.py always trains LAION + MMC4).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/problem.h"

namespace fs::protocol {

struct CmdlineImport {
  // Defaults + everything the line says. Datasets: one for each of laion and
  // mmc4 that some flag mentions (in that order); both defaults when no
  // dataset flag is present.
  RunConfig config;
  // Words we do not know, as written; a flag's guessed value follows it
  // after a space ("--model_family flamingo"). Never silently dropped.
  std::vector<std::string> unknownFlags;
  // Known words with no effect here (wandb, --offline, launcher options that
  // do not shape the run, leading VAR=value assignments), as written.
  std::vector<std::string> ignoredFlags;
  // Bad values and missing values (errors; the field keeps its default),
  // and what train.py would do differently or silently (warnings). Each
  // names the flag and the value; `path` is the config field.
  std::vector<Problem> problems;

  bool ok() const { return !hasErrors(problems); }
};

// The full line as pasted (see NOTE [Shell words] in shell_words.h for the
// quoting rules). A line that does not split is a single error problem.
CmdlineImport importOpenFlamingoCmdline(const std::string& line);
// Already split words: [VAR=x ...] [launcher [options]] [script] flags...
// Launchers: torchrun, python [-u ...] [-m torch.distributed.run|launch],
// srun [options] (before python or torchrun), or none (just the flags).
// The script is the first word ending in "train.py".
CmdlineImport importOpenFlamingoArgs(const std::vector<std::string>& words);

struct CmdlineExport {
  // torchrun --nnodes=N --nproc_per_node=M [--master_addr=A --master_port=P]
  //   train.py flags...   (flags that differ from train.py's defaults, plus
  //   each dataset's shards, --batch_size_X and --train_num_samples_X)
  std::vector<std::string> argv;
  // argv quoted for a POSIX shell, one flag per line (" \\\n  " between
  // flags); splitShellWords(line) == argv.
  std::string line;
  // Errors: every field whose value the line cannot carry, naming the path,
  // our value and what the line imports back as. Warnings: see the NOTE.
  std::vector<Problem> notExpressible;
};

CmdlineExport exportOpenFlamingoCmdline(const RunConfig& config);

}  // namespace fs::protocol

// `flamingo-studio remote ...`: the headless front end over the app's remote
// classes (app/remote, app/launch, app/cluster), for scripts and for a login node without a
// display. QCoreApplication only, no widgets.
//
//   hosts HOST[,HOST...]        pre-flight table
//   ls HOST                     runs under the run root, with their states
//   launch --config F --hosts A,B | --slurm LOGIN [--print-script]
//   follow HOST:RUN_DIR [--jsonl]
//   stop | kill | checkpoint | pause | resume HOST:RUN_DIR
//   queue LOGIN                 the user's SLURM jobs
//
// HOST is an ssh_config alias or [user@]host, or "local" for this machine.
// Exit codes follow flamingo-train's: 0 success, 1 failure, 2 bad usage.
//
// Thread-safety: run on the main thread, with a QCoreApplication alive.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fs::studio::remote {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Which of the streams a terminal shows: what goes there is escaped (NOTE
// [Remote text on a terminal] in terminal_text.cpp).
struct Terminals {
  bool out = false;
  bool err = false;
};

// `args` are what follows "remote" on the command line.
int runRemoteCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 Terminals terminals = {});

}  // namespace fs::studio::remote

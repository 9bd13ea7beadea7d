// SlurmJobs: the SLURM client — submit a batch script, read the queue, a
// finished job, the script a job runs, and cancel — through remote::Host::run,
// so the same code serves the login node the app runs on (LocalHost) and a
// cluster reached over SSH.
//
// Every SLURM command is an argument vector: `prefix` (e.g. {"env",
// "SLURM_CONF=/path/slurm.conf"}, or a site's wrapper) followed by the
// command and its arguments; nothing is a shell line.
//
// NOTE [Reading squeue]: one batched squeue per poll (`--me`: active jobs, or
// `--states=all --jobs id1,id2,...`, which also lists jobs that ended within
// the controller's MinJobAge; without --states=all squeue leaves them out) with a fixed --format whose fields
// are separated by '\x1f' (ASCII unit separator: it cannot appear in a job name typed into sbatch, nor in a
// state, reason, time or node list). Unknown states are kept as their text.
// A job the controller has forgotten is absent; jobcomp/filetxt or sacct
// (where the site has accounting) say how it ended.
//
// Errors name the host and the command, with the command's stderr.
// Ownership: borrows the Host, which must outlive it.
// Thread-safety: calls block (run them on a worker thread); the object holds
// no state beyond its arguments, so concurrent calls are as safe as the Host's.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "app/remote/remote_host.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::app::cluster {

struct SlurmJobRow {
  std::string id;  // "123", or "123_4" for an array task
  std::string name;
  std::string state;      // PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, CANCELLED, ... as SLURM says
  std::string reason;     // why pending ("Priority", "BeginTime", ...), "None" when running
  std::string elapsed;    // as squeue prints it: [D-][HH:]MM:SS
  std::string nodes;      // node count
  std::string nodelist;   // compressed host list; empty while pending
  std::string exit_code;  // "0:0" (code:signal); only from finishedJob / jobcomp
  bool operator==(const SlurmJobRow&) const = default;
};

// True for the states in which a job may still run (pending, running, ...).
bool isActiveState(const std::string& state);

// The argv of a queue query (exposed for tests and for the GUI's "show command").
std::vector<std::string> squeueArgs(const std::vector<std::string>& ids);
// squeue's output for squeueArgs: one row per line; a malformed line is kCorruption naming it.
protocol::StatusOr<std::vector<SlurmJobRow>> parseSqueue(const std::string& out);
// "Key=Value Key2=Value2 ..." (scontrol --oneliner, a jobcomp/filetxt line):
// a value runs to the next " Key=" so values with blanks survive where SLURM
// prints them (Command=, WorkDir=).
std::map<std::string, std::string> parseKeyValues(const std::string& line);
// A row from such a line (JobId, JobName / Name, JobState, Reason, RunTime, NumNodes / NodeCnt, NodeList,
// ExitCode).
SlurmJobRow rowFromKeyValues(const std::map<std::string, std::string>& fields);

class SlurmJobs {
 public:
  SlurmJobs(remote::Host& host, std::vector<std::string> prefix = {}, int timeout_ms = 60'000);

  // Makes <run>/logs, writes <run>/config.yaml (refused when the run directory
  // already holds a different one), <run>/slurm.sbatch (the script as given),
  // then `sbatch --parsable <run>/slurm.sbatch`. Returns the job id.
  protocol::StatusOr<std::string> submit(const std::string& run_dir, const std::string& script,
                                         const protocol::RunConfig& config);
  // The rows of `ids` (any state the controller still knows), or of all the
  // user's active jobs when `ids` is empty. Unknown ids are left out.
  protocol::StatusOr<std::vector<SlurmJobRow>> queue(const std::vector<std::string>& ids = {});
  // `scontrol show job --oneliner <id>`: kNotFound once the controller has forgotten it.
  protocol::StatusOr<SlurmJobRow> job(const std::string& id);
  // The batch script SLURM holds for the job (scontrol write batch_script <id> -).
  protocol::StatusOr<std::string> batchScript(const std::string& id);
  protocol::Status cancel(const std::string& id);
  // `scontrol requeue <id>`: the job stops (SIGTERM, then SIGKILL) and goes back to pending.
  protocol::Status requeue(const std::string& id);

  // Polled by every command; set: the command is ended and the call fails ("cancelled").
  void setCancelFlag(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  // Where an id must be plain: digits, optionally "_" and digits.
  static bool isJobId(const std::string& id);

 private:
  protocol::StatusOr<remote::CommandResult> slurm(std::vector<std::string> argv,
                                                  const std::string& stdin_data = {});
  std::string describe(const std::vector<std::string>& argv) const;

  remote::Host& host_;
  std::vector<std::string> prefix_;
  int timeout_ms_;
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace fs::app::cluster

// The batch script: validation of the SLURM settings, then the text
// (NOTE [SLURM batch script] in slurm_script.h).
#include "app/launch/slurm/slurm_script.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "app/launch/slurm/sbatch_options.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/launch_env.h"
#include "backend/protocol/config/run_location.h"

namespace fs::app::cluster {

using protocol::Problem;
using protocol::Status;
using protocol::StatusOr;

namespace {

// Options the script sets itself (long names, as parseSbatchLine resolves
// them: -J, --job, --tasks-per-node, ... included); an extra line repeating
// one would silently change where the log goes or how many ranks start.
const std::vector<std::string> kOwnedOptions = {"job-name", "nodes",   "ntasks-per-node", "tasks-per-node",
                                                "ntasks",   "output",  "error",           "open-mode",
                                                "chdir",    "parsable"};

// Options that would hand the job a command or an environment we do not see:
// --wrap replaces the script, --export-file reads variables from a file.
const std::vector<std::string> kRefusedOptions = {"wrap", "export-file"};

bool hasControl(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// A value on an #SBATCH line: sbatch splits the line at blanks outside double
// quotes and takes '\' as an escape, so: in double quotes, '"' and '\' escaped.
std::string sbatchQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// SLURM expands %j, %u, ... in --output; "%%" is a '%'.
std::string escapePercent(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

// The inverse of sbatchQuote for one value at the start of `text`: up to the
// first blank outside double quotes, '\' escaping the next character.
std::string sbatchUnquote(std::string_view text) {
  std::string out;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      out += text[++i];
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
      break;
    } else {
      out += c;
    }
  }
  return out;
}

std::string num(int64_t v) {
  return std::to_string(v);
}

}  // namespace

std::string slurmScriptRunDir(std::string_view script) {
  std::string runDir;
  std::size_t start = 0;
  bool first = true;
  while (start < script.size()) {
    const std::size_t end = std::min(script.find('\n', start), script.size());
    std::string_view line = script.substr(start, end - start);
    start = end + 1;
    const bool shebang = first && line.starts_with("#!");
    first = false;
    const auto text = line.find_first_not_of(" \t\r");
    if (shebang || text == std::string_view::npos) continue;
    if (line[text] != '#') break;  // sbatch reads no #SBATCH line after the first command
    line.remove_prefix(text);
    if (!line.starts_with("#SBATCH")) continue;
    line.remove_prefix(7);
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t")));
    for (const std::string_view option : {"--chdir=", "--chdir ", "-D ", "-D"}) {
      if (line.starts_with(option)) {
        std::string_view value = line.substr(option.size());
        value.remove_prefix(std::min(value.size(), value.find_first_not_of(" \t")));
        runDir = sbatchUnquote(value);
        break;
      }
    }
  }
  return runDir;
}

std::string slurmArgsRefusal(const std::string& program, const std::string& configPath,
                             const std::vector<std::string>& extraArgs) {
  std::string out = program + ": the config (" + configPath +
                    " with any --set) adds sbatch options to the batch script (launch.slurm.extra_args), "
                    "refused without --allow-slurm-args:\n";
  for (std::size_t i = 0; i < extraArgs.size(); ++i) {
    std::string shown;  // control characters (a line break, an escape sequence) as \xNN
    for (char c : extraArgs[i]) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        shown += hex;
      } else {
        shown += c;
      }
    }
    out += "  launch.slurm.extra_args[" + std::to_string(i) + "]: " + shown + "\n";
  }
  return out +
         "An sbatch option can change what the job runs. Read the whole script with --print-script; if you "
         "trust every line, run again with --allow-slurm-args.\n";
}

std::string slurmLogPath(const std::string& run_dir, const std::string& job_id) {
  return run_dir + "/logs/slurm-" + job_id + ".out";
}

namespace {

// The problems of launch.slurm.extra_args[index].
std::vector<Problem> extraArgProblems(std::size_t index, const std::string& arg) {
  std::vector<Problem> problems;
  const std::string path = "launch.slurm.extra_args[" + std::to_string(index) + "]";
  auto error = [&](std::string message, std::string fix) {
    problems.push_back({Problem::Severity::kError, path, std::move(message), std::move(fix)});
  };
  const std::string oneOption = "one sbatch option per item, e.g. --mem=64G";
  std::string_view line = arg;
  if (line.starts_with("#SBATCH")) line.remove_prefix(7);
  if (hasControl(arg)) {
    error("'" + arg + "' holds a line break or another control character", oneOption);
    return problems;
  }
  // NOTE [sbatch option parsing] (sbatch_options.h): what sbatch will read on this line.
  auto options = parseSbatchLine(line);
  if (!options) {
    error("'" + arg + "': " + options.status().message(), oneOption);
    return problems;
  }
  if (options->empty()) error("'" + arg + "' is not an sbatch option", oneOption);
  for (const auto& o : options.value()) {
    if (std::find(kOwnedOptions.begin(), kOwnedOptions.end(), o.name) != kOwnedOptions.end()) {
      error("'" + o.written + "' is --" + o.name +
                ", which the app sets (log file, ranks, job name, run directory)",
            "use launch.nnodes / nproc_per_node, or edit the previewed script");
    } else if (std::find(kRefusedOptions.begin(), kRefusedOptions.end(), o.name) != kRefusedOptions.end()) {
      error("'" + o.written + "' is --" + o.name + ", which hands the job a command or environment unseen",
            "set variables in launch.env (shown in the script), or edit the previewed script");
    } else if (o.name == "export") {
      const auto names = unsafeExportNames(o.value);
      if (!names.empty()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        error("'" + o.written + "' sets " + list +
                  ", which makes the job's bash run code before the script's first line",
              "remove " + list + " from --export");
      }
    }
  }
  return problems;
}

}  // namespace

std::vector<Problem> validateSlurmJob(const protocol::RunConfig& config, const SlurmJobSpec& spec) {
  std::vector<Problem> problems;
  auto error = [&](std::string path, std::string message, std::string fix = {}) {
    problems.push_back({Problem::Severity::kError, std::move(path), std::move(message), std::move(fix)});
  };
  const auto& l = config.launch;
  const auto& s = l.slurm;
  if (l.nnodes < 1)
    error("launch.nnodes", num(l.nnodes) + " nodes; a job needs at least one", "set 1 or more");
  if (l.nproc_per_node < 1) {
    error("launch.nproc_per_node", num(l.nproc_per_node) + " ranks per node; a job needs at least one",
          "set 1 or more");
  }
  static const std::regex kName("[A-Za-z0-9_.,+-]+");
  if (!s.partition.empty() && !std::regex_match(s.partition, kName)) {
    error("launch.slurm.partition", "'" + s.partition + "' is not a partition name",
          "letters, digits and _ . , + - only (a comma list for several); empty = the cluster's default");
  }
  if (!s.account.empty() && !std::regex_match(s.account, kName)) {
    error("launch.slurm.account", "'" + s.account + "' is not an account name",
          "letters, digits and _ . , + - only; empty = none");
  }
  static const std::regex kTime(R"((\d+-)?\d+(:\d+){0,2}|UNLIMITED|unlimited|INFINITE|infinite)");
  if (!s.time_limit.empty() && !std::regex_match(s.time_limit, kTime)) {
    error("launch.slurm.time_limit", "'" + s.time_limit + "' is not a SLURM time",
          "use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. 2-00:00:00); empty = partition "
          "default");
  }
  if (s.gpus_per_node < 0)
    error("launch.slurm.gpus_per_node", num(s.gpus_per_node) + " is negative", "0 or more");
  if (s.cpus_per_task < 0)
    error("launch.slurm.cpus_per_task", num(s.cpus_per_task) + " is negative", "0 or more");
  for (std::size_t i = 0; i < s.extra_args.size(); ++i) {
    for (auto& p : extraArgProblems(i, s.extra_args[i])) problems.push_back(std::move(p));
  }
  if (spec.run_dir.empty() || spec.run_dir[0] != '/') {
    error("run directory", "'" + spec.run_dir + "' is not an absolute path on the cluster");
  } else if (hasControl(spec.run_dir) || spec.run_dir.find('\\') != std::string::npos) {
    error("run directory", "'" + spec.run_dir + "' holds a control character or a backslash",
          "SLURM's --output stops expanding %j when it sees a backslash; choose another run root");
  } else if (const std::string why = protocol::runPathTextProblem(spec.run_dir); !why.empty()) {
    // NOTE [Run directory text] (backend/protocol/config/run_location.h).
    error("run directory", "'" + spec.run_dir + "' " + why, "choose another name or run root");
  }
  if (spec.engine.empty() || hasControl(spec.engine)) {
    error("engine", "'" + spec.engine + "' is not a path of flamingo-train on the cluster");
  }
  const std::string name = spec.job_name.empty() ? config.name : spec.job_name;
  if (name.empty() || hasControl(name))
    error("job name", "'" + name + "' is empty or holds a control character");
  // The script exports launch.env: a name that is not a variable name would not be one there.
  for (auto& p : protocol::validateLaunchEnv(l)) problems.push_back(std::move(p));
  return problems;
}

StatusOr<std::string> makeSlurmScript(const protocol::RunConfig& config, const SlurmJobSpec& spec) {
  const auto problems = validateSlurmJob(config, spec);
  if (protocol::hasErrors(problems)) return Status::invalidArgument(protocol::formatProblems(problems));
  const auto& l = config.launch;
  const auto& s = l.slurm;
  const std::string& run = spec.run_dir;
  const int64_t cpusPerTask = s.cpus_per_task > 0 ? s.cpus_per_task : l.threads_per_rank;
  std::string out = "#!/bin/bash\n";
  auto sbatch = [&out](const std::string& line) { out += "#SBATCH " + line + "\n"; };
  sbatch("--job-name=" + sbatchQuote(spec.job_name.empty() ? config.name : spec.job_name));
  sbatch("--nodes=" + num(l.nnodes));
  sbatch("--ntasks-per-node=" + num(l.nproc_per_node));
  if (cpusPerTask > 0) sbatch("--cpus-per-task=" + num(cpusPerTask));
  if (s.gpus_per_node > 0) sbatch("--gpus-per-node=" + num(s.gpus_per_node));
  if (!s.partition.empty()) sbatch("--partition=" + s.partition);
  if (!s.account.empty()) sbatch("--account=" + s.account);
  if (!s.time_limit.empty()) {
    sbatch("--time=" + s.time_limit);
    sbatch("--signal=TERM@" + std::to_string(kStopLeadS));
  }
  sbatch("--requeue");
  sbatch("--chdir=" + sbatchQuote(run));
  sbatch("--output=" + sbatchQuote(escapePercent(run) + "/logs/slurm-%j.out"));
  sbatch("--open-mode=append");
  for (const auto& extra : s.extra_args) {
    std::string line = extra.rfind("#SBATCH", 0) == 0 ? extra.substr(7) : extra;
    line.erase(0, line.find_first_not_of(" \t"));
    sbatch(line);
  }
  out += "\n# One task per rank; ranks read SLURM_PROCID etc. and rank 0's host from SLURM_JOB_NODELIST.\n";
  out +=
      "# Rank 0 listens on the first node, where this script runs: the first port from one derived\n"
      "# from the job id that nothing listens on yet.\n"
      "MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))\n"
      "for _ in $(seq 100); do\n"
      "  (exec 3<>\"/dev/tcp/127.0.0.1/$MASTER_PORT\") 2>/dev/null || break\n"
      "  MASTER_PORT=$((MASTER_PORT + 1))\n"
      "done\n"
      "export MASTER_PORT\n";
  if (!l.env.empty()) {
    out += "# launch.env: every rank's environment (srun --export=ALL hands the script's to each task).\n";
    for (const auto& [name, value] : l.env)
      out += "export " + name + "=" + protocol::quoteShellWord(value) + "\n";
  }
  out += "echo \"job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, restart ${SLURM_RESTART_COUNT:-0}\"\n";
  std::string srun = "exec srun --kill-on-bad-exit=1" + std::string(l.env.empty() ? "" : " --export=ALL") +
                     " --nodes=" + num(l.nnodes) + " --ntasks-per-node=" + num(l.nproc_per_node);
  if (cpusPerTask > 0) srun += " --cpus-per-task=" + num(cpusPerTask);
  srun += " \\\n  " + protocol::quoteShellWord(spec.engine) + " train --config " +
          protocol::quoteShellWord(run + "/config.yaml") + " --run-dir " + protocol::quoteShellWord(run) +
          " --set launch.kind=external" + (spec.allow_pipe ? " --allow-pipe" : "") + "\n";
  out += srun;
  return out;
}

}  // namespace fs::app::cluster

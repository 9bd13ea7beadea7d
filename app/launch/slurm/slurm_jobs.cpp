// SlurmJobs: sbatch, squeue, scontrol and scancel through Host::run.
#include "app/launch/slurm/slurm_jobs.h"

#include <algorithm>
#include <string_view>

#include "app/launch/run_config_upload.h"
#include "backend/protocol/config/config_yaml.h"

namespace fs::app::cluster {

using protocol::Status;
using protocol::StatusOr;

namespace {

constexpr char kSep = '\x1f';
// %i id, %j name, %T state, %r reason, %M elapsed, %D nodes, %N node list.
const char* const kSqueueFormat = "%i\x1f%j\x1f%T\x1f%r\x1f%M\x1f%D\x1f%N";

std::string trimmed(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string firstOf(const std::map<std::string, std::string>& f, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (auto it = f.find(k); it != f.end()) return it->second;
  }
  return {};
}

}  // namespace

bool isActiveState(const std::string& state) {
  static const std::vector<std::string> kActive = {
      "PENDING",      "RUNNING",  "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED",     "REQUEUE_FED",
      "REQUEUE_HOLD", "RESIZING", "SIGNALING",  "STAGE_OUT",   "STOPPED",   "RESV_DEL_HOLD"};
  return std::find(kActive.begin(), kActive.end(), state) != kActive.end();
}

std::vector<std::string> squeueArgs(const std::vector<std::string>& ids) {
  std::vector<std::string> argv = {"squeue", "--noheader", std::string("--format=") + kSqueueFormat};
  if (ids.empty()) {
    argv.push_back("--me");
  } else {
    argv.push_back("--states=all");  // without it squeue leaves out the ended jobs it still knows
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
    argv.push_back("--jobs=" + list);
  }
  return argv;
}

StatusOr<std::vector<SlurmJobRow>> parseSqueue(const std::string& out) {
  std::vector<SlurmJobRow> rows;
  for (const auto& raw : split(out, '\n')) {
    if (trimmed(raw).empty()) continue;
    const auto f = split(raw, kSep);
    if (f.size() != 7) {
      return Status::corruption("squeue: expected 7 fields separated by \\x1f, got " +
                                std::to_string(f.size()) + " in '" + raw + "'");
    }
    SlurmJobRow r;
    r.id = trimmed(f[0]);
    r.name = f[1];
    r.state = trimmed(f[2]);
    r.reason = trimmed(f[3]);
    r.elapsed = trimmed(f[4]);
    r.nodes = trimmed(f[5]);
    r.nodelist = trimmed(f[6]);
    if (!SlurmJobs::isJobId(r.id))
      return Status::corruption("squeue: '" + r.id + "' is not a job id in '" + raw + "'");
    rows.push_back(std::move(r));
  }
  return rows;
}

// NOTE [No std::regex on SLURM output]: libstdc++'s regex matches by recursion,
// one stack frame per character a repetition takes, so a long word in a
// scontrol line (a job's Comment=, WorkDir=) or a long id in squeue's output
// overflowed the stack: a 100 KB word or id crashed a normal build, a 32 KB
// word one under ASan. Keys and ids are found by hand, in one pass.
std::map<std::string, std::string> parseKeyValues(const std::string& line) {
  // A key: at the start of the line or after a blank, a letter, then letters,
  // digits and _ : / . up to a '=' (ASCII, whatever the locale).
  auto isBlank = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  auto isLetter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  auto isKeyChar = [&](char c) {
    return isLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == ':' || c == '/' || c == '.';
  };
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>>
      keys;  // key, [start of key, start of value]
  for (std::size_t i = 0; i < line.size();) {
    if (!(i == 0 || isBlank(line[i - 1])) || !isLetter(line[i])) {
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    while (end < line.size() && isKeyChar(line[end])) ++end;
    if (end < line.size() && line[end] == '=') {
      keys.push_back({line.substr(i, end - i), {i, end + 1}});
      i = end + 1;
    } else {
      i = end;
    }
  }
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::size_t valueStart = keys[i].second.second;
    // The value ends at the blank before the next key.
    const std::size_t end = i + 1 < keys.size() ? keys[i + 1].second.first : line.size();
    out[keys[i].first] = trimmed(line.substr(valueStart, end - valueStart));
  }
  return out;
}

SlurmJobRow rowFromKeyValues(const std::map<std::string, std::string>& f) {
  SlurmJobRow r;
  r.id = firstOf(f, {"JobId"});
  r.name = firstOf(f, {"JobName", "Name"});
  r.state = firstOf(f, {"JobState"});
  r.reason = firstOf(f, {"Reason"});
  r.elapsed = firstOf(f, {"RunTime"});
  r.nodes = firstOf(f, {"NumNodes", "NodeCnt"});
  r.nodelist = firstOf(f, {"NodeList"});
  if (r.nodelist == "(null)") r.nodelist.clear();
  r.exit_code = firstOf(f, {"ExitCode"});
  return r;
}

bool SlurmJobs::isJobId(const std::string& id) {
  // Digits, optionally "_" and digits (NOTE [No std::regex on SLURM output]).
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const auto underscore = id.find('_');
  if (underscore == std::string::npos) return digits(id);
  return digits(std::string_view(id).substr(0, underscore)) &&
         digits(std::string_view(id).substr(underscore + 1));
}

SlurmJobs::SlurmJobs(remote::Host& host, std::vector<std::string> prefix, int timeout_ms)
    : host_(host), prefix_(std::move(prefix)), timeout_ms_(timeout_ms) {}

std::string SlurmJobs::describe(const std::vector<std::string>& argv) const {
  // The command and its first arguments, without the squeue format (it holds separators).
  std::string out = host_.name() + ": " + argv.front();
  for (std::size_t i = 1; i < argv.size() && i < 5; ++i) {
    if (argv[i].rfind("--format=", 0) != 0) out += " " + argv[i];
  }
  return out;
}

StatusOr<remote::CommandResult> SlurmJobs::slurm(std::vector<std::string> argv,
                                                 const std::string& stdin_data) {
  std::vector<std::string> full = prefix_;
  full.insert(full.end(), argv.begin(), argv.end());
  remote::ExecOptions o;
  o.stdin_data = stdin_data;
  o.timeout_ms = timeout_ms_;
  o.cancel = cancel_;
  auto r = host_.run(full, o);
  if (!r) return Status::ioError(describe(argv) + ": " + r.status().message());
  return r;
}

StatusOr<std::string> SlurmJobs::submit(const std::string& run_dir, const std::string& script,
                                        const protocol::RunConfig& config) {
  if (Status s = host_.makeDirs(run_dir + "/logs"); !s) return s;
  const std::string configPath = run_dir + "/config.yaml";
  const std::string yaml = protocol::dumpConfigYaml(config);
  auto existing = host_.readFile(configPath, 0, 16u << 20);
  if (existing) {
    if (existing.value() != yaml) {
      return Status::invalidArgument(host_.name() + ": " + configPath +
                                     " holds a different config; resume with that config or use a new run "
                                     "directory");
    }
  } else if (existing.status().code() != Status::Code::kNotFound) {
    return existing.status();
  } else if (Status s = writeRunConfig(host_, run_dir, yaml); !s) {
    return s;
  }
  const std::string scriptPath = run_dir + "/slurm.sbatch";
  if (Status s = host_.writeFileAtomic(scriptPath, script, 0755); !s) return s;
  auto r = slurm({"sbatch", "--parsable", scriptPath});
  if (!r) return r.status();
  if (r->exit_code != 0) {
    return Status::ioError(describe({"sbatch", scriptPath}) + " failed (exit " +
                           std::to_string(r->exit_code) + r->signal + "): " + trimmed(r->err));
  }
  // --parsable: "<id>" or "<id>;<cluster>".
  const std::string id = trimmed(r->out).substr(0, trimmed(r->out).find(';'));
  if (!isJobId(id)) {
    return Status::corruption(describe({"sbatch", scriptPath}) + ": '" + trimmed(r->out) +
                              "' is not a job id");
  }
  return id;
}

StatusOr<std::vector<SlurmJobRow>> SlurmJobs::queue(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (!isJobId(id)) return Status::invalidArgument("'" + id + "' is not a SLURM job id");
  }
  const auto argv = squeueArgs(ids);
  auto r = slurm(argv);
  if (!r) return r.status();
  if (r->exit_code != 0) {
    // Every id forgotten by the controller: an empty answer, not an error.
    if (!ids.empty() && r->err.find("Invalid job id") != std::string::npos) return std::vector<SlurmJobRow>{};
    return Status::ioError(describe(argv) + " failed (exit " + std::to_string(r->exit_code) + r->signal +
                           "): " + trimmed(r->err));
  }
  auto rows = parseSqueue(r->out);
  if (!rows) return Status::corruption(host_.name() + ": " + rows.status().message());
  return rows;
}

StatusOr<SlurmJobRow> SlurmJobs::job(const std::string& id) {
  if (!isJobId(id)) return Status::invalidArgument("'" + id + "' is not a SLURM job id");
  auto r = slurm({"scontrol", "show", "job", "--oneliner", id});
  if (!r) return r.status();
  if (r->exit_code != 0) {
    const std::string what = describe({"scontrol", "show", "job", id});
    if (r->err.find("Invalid job id") != std::string::npos) {
      return Status::notFound(what + ": the controller no longer knows job " + id);
    }
    return Status::ioError(what + " failed: " + trimmed(r->err));
  }
  SlurmJobRow row = rowFromKeyValues(parseKeyValues(trimmed(split(r->out, '\n').front())));
  if (row.id != id) {
    return Status::corruption(describe({"scontrol", "show", "job", id}) + ": no JobId=" + id +
                              " in its answer");
  }
  return row;
}

StatusOr<std::string> SlurmJobs::batchScript(const std::string& id) {
  if (!isJobId(id)) return Status::invalidArgument("'" + id + "' is not a SLURM job id");
  auto r = slurm({"scontrol", "write", "batch_script", id, "-"});
  if (!r) return r.status();
  if (r->exit_code != 0) {
    return Status::ioError(describe({"scontrol", "write", "batch_script", id}) +
                           " failed: " + trimmed(r->err));
  }
  return r->out;
}

Status SlurmJobs::cancel(const std::string& id) {
  if (!isJobId(id)) return Status::invalidArgument("'" + id + "' is not a SLURM job id");
  auto r = slurm({"scancel", id});
  if (!r) return r.status();
  if (r->exit_code != 0) return Status::ioError(describe({"scancel", id}) + " failed: " + trimmed(r->err));
  return Status::ok();
}

Status SlurmJobs::requeue(const std::string& id) {
  if (!isJobId(id)) return Status::invalidArgument("'" + id + "' is not a SLURM job id");
  auto r = slurm({"scontrol", "requeue", id});
  if (!r) return r.status();
  if (r->exit_code != 0)
    return Status::ioError(describe({"scontrol", "requeue", id}) + " failed: " + trimmed(r->err));
  return Status::ok();
}

}  // namespace fs::app::cluster

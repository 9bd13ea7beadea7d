// Fuzz target: what SLURM commands print on a cluster (app/launch/slurm/slurm_jobs.h):
// squeue's output (parseSqueue) and scontrol --oneliner / jobcomp lines
// (parseKeyValues, rowFromKeyValues), line by line. The parser is app code
// (fs_app_launch_slurm links QtCore, but slurm_jobs.cpp itself uses no Qt); this
// target compiles it directly. Checked: a squeue output that parses prints
// again (fields joined by \x1f) to the same rows; every row's id is a job id;
// parseKeyValues keys are written "KEY=" in the line, values have no
// surrounding blanks.
#include "app/launch/slurm/slurm_jobs.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace cluster = fs::app::cluster;

std::string print(const std::vector<cluster::SlurmJobRow>& rows) {
  std::string out;
  for (const auto& r : rows) {
    for (const std::string* f : {&r.id, &r.name, &r.state, &r.reason, &r.elapsed, &r.nodes, &r.nodelist}) {
      if (f != &r.id) out += '\x1f';
      out += *f;
    }
    out += '\n';
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(fs::fuzz::text(data, size));
  auto rows = cluster::parseSqueue(input);
  if (rows) {
    for (const auto& r : rows.value()) {
      fs::fuzz::check(cluster::SlurmJobs::isJobId(r.id), "a row whose id is not a job id: " + r.id);
    }
    const std::string printed = print(rows.value());
    auto again = cluster::parseSqueue(printed);
    fs::fuzz::check(again.isOk(), "printed rows do not parse: " + again.status().message());
    fs::fuzz::check(again.value() == rows.value(), "parseSqueue(print(rows)) != rows for " + printed);
  } else {
    fs::fuzz::check(rows.status().message().starts_with("squeue: "),
                    "a squeue error that does not say so: " + rows.status().message());
  }

  std::size_t start = 0;
  while (start <= input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    const std::string line = input.substr(start, end - start);
    start = end + 1;
    const auto fields = cluster::parseKeyValues(line);
    for (const auto& [key, value] : fields) {
      fs::fuzz::check(line.find(key + "=") != std::string::npos, "a key that is not in the line: " + key);
      fs::fuzz::check(value.empty() || (value.front() != ' ' && value.back() != ' '),
                      "a value with surrounding blanks: '" + value + "'");
    }
    (void)cluster::rowFromKeyValues(fields);
  }
  return 0;
}

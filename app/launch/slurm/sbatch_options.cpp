// NOTE [sbatch option parsing] in sbatch_options.h.
#include "app/launch/slurm/sbatch_options.h"

#include <algorithm>

namespace fs::app::cluster {

using protocol::Status;
using protocol::StatusOr;

namespace {

enum class Arg { kNone, kRequired, kOptional };

struct OptionSpec {
  std::string_view name;
  Arg arg;
  char shortName;  // 0: none
};

// sbatch's options in SLURM 22.05: long name, argument, short name.
constexpr OptionSpec kSbatchOptions[] = {
    {"account", Arg::kRequired, 'A'},
    {"acctg-freq", Arg::kRequired, 0},
    {"array", Arg::kRequired, 'a'},
    {"batch", Arg::kRequired, 0},
    {"begin", Arg::kRequired, 'b'},
    {"bb", Arg::kRequired, 0},
    {"bbf", Arg::kRequired, 0},
    {"chdir", Arg::kRequired, 'D'},
    {"cluster", Arg::kRequired, 0},
    {"cluster-constraint", Arg::kRequired, 0},
    {"clusters", Arg::kRequired, 'M'},
    {"comment", Arg::kRequired, 0},
    {"constraint", Arg::kRequired, 'C'},
    {"container", Arg::kRequired, 0},
    {"context", Arg::kRequired, 0},
    {"contiguous", Arg::kNone, 0},
    {"core-spec", Arg::kRequired, 'S'},
    {"cores-per-socket", Arg::kRequired, 0},
    {"cpu-freq", Arg::kRequired, 0},
    {"cpus-per-gpu", Arg::kRequired, 0},
    {"cpus-per-task", Arg::kRequired, 'c'},
    {"deadline", Arg::kRequired, 0},
    {"delay-boot", Arg::kRequired, 0},
    {"dependency", Arg::kRequired, 'd'},
    {"distribution", Arg::kRequired, 'm'},
    {"error", Arg::kRequired, 'e'},
    {"exclude", Arg::kRequired, 'x'},
    {"exclusive", Arg::kOptional, 0},
    {"export", Arg::kRequired, 0},
    {"export-file", Arg::kRequired, 0},
    {"extra-node-info", Arg::kRequired, 'B'},
    {"get-user-env", Arg::kOptional, 0},
    {"gid", Arg::kRequired, 0},
    {"gpu-bind", Arg::kRequired, 0},
    {"gpu-freq", Arg::kRequired, 0},
    {"gpus", Arg::kRequired, 'G'},
    {"gpus-per-node", Arg::kRequired, 0},
    {"gpus-per-socket", Arg::kRequired, 0},
    {"gpus-per-task", Arg::kRequired, 0},
    {"gres", Arg::kRequired, 0},
    {"gres-flags", Arg::kRequired, 0},
    {"help", Arg::kNone, 'h'},
    {"hint", Arg::kRequired, 0},
    {"hold", Arg::kNone, 'H'},
    {"ignore-pbs", Arg::kNone, 0},
    {"input", Arg::kRequired, 'i'},
    {"job-name", Arg::kRequired, 'J'},
    {"kill-on-invalid-dep", Arg::kRequired, 0},
    {"licenses", Arg::kRequired, 'L'},
    {"mail-type", Arg::kRequired, 0},
    {"mail-user", Arg::kRequired, 0},
    {"mcs-label", Arg::kRequired, 0},
    {"mem", Arg::kRequired, 0},
    {"mem-bind", Arg::kRequired, 0},
    {"mem-per-cpu", Arg::kRequired, 0},
    {"mem-per-gpu", Arg::kRequired, 0},
    {"mincpus", Arg::kRequired, 0},
    {"network", Arg::kRequired, 0},
    {"nice", Arg::kOptional, 0},
    {"no-kill", Arg::kOptional, 'k'},
    {"no-requeue", Arg::kNone, 0},
    {"nodefile", Arg::kRequired, 'F'},
    {"nodelist", Arg::kRequired, 'w'},
    {"nodes", Arg::kRequired, 'N'},
    {"ntasks", Arg::kRequired, 'n'},
    {"ntasks-per-core", Arg::kRequired, 0},
    {"ntasks-per-gpu", Arg::kRequired, 0},
    {"ntasks-per-node", Arg::kRequired, 0},
    {"ntasks-per-socket", Arg::kRequired, 0},
    {"ntasks-per-tres", Arg::kRequired, 0},
    {"open-mode", Arg::kRequired, 0},
    {"output", Arg::kRequired, 'o'},
    {"overcommit", Arg::kNone, 'O'},
    {"oversubscribe", Arg::kNone, 's'},
    {"parsable", Arg::kNone, 0},
    {"partition", Arg::kRequired, 'p'},
    {"power", Arg::kRequired, 0},
    {"prefer", Arg::kRequired, 0},
    {"priority", Arg::kRequired, 0},
    {"profile", Arg::kRequired, 0},
    {"propagate", Arg::kOptional, 0},
    {"qos", Arg::kRequired, 'q'},
    {"quiet", Arg::kNone, 'Q'},
    {"reboot", Arg::kNone, 0},
    {"requeue", Arg::kNone, 0},
    {"reservation", Arg::kRequired, 0},
    {"signal", Arg::kRequired, 0},
    {"sockets-per-node", Arg::kRequired, 0},
    {"spread-job", Arg::kNone, 0},
    {"switches", Arg::kRequired, 0},
    {"tasks-per-node", Arg::kRequired, 0},
    {"test-only", Arg::kNone, 0},
    {"thread-spec", Arg::kRequired, 0},
    {"threads-per-core", Arg::kRequired, 0},
    {"time", Arg::kRequired, 't'},
    {"time-min", Arg::kRequired, 0},
    {"tmp", Arg::kRequired, 0},
    {"uid", Arg::kRequired, 0},
    {"usage", Arg::kNone, 0},
    {"use-min-nodes", Arg::kNone, 0},
    {"verbose", Arg::kNone, 'v'},
    {"version", Arg::kNone, 'V'},
    {"wait", Arg::kNone, 'W'},
    {"wait-all-nodes", Arg::kRequired, 0},
    {"wckey", Arg::kRequired, 0},
    {"wrap", Arg::kRequired, 0},
};

const OptionSpec* byShort(char c) {
  for (const auto& o : kSbatchOptions) {
    if (o.shortName == c) return &o;
  }
  return nullptr;
}

// getopt_long's lookup: an exact name, else the one name `given` is a prefix of.
StatusOr<const OptionSpec*> byLong(std::string_view given) {
  std::vector<const OptionSpec*> candidates;
  for (const auto& o : kSbatchOptions) {
    if (o.name == given) return &o;
    if (o.name.starts_with(given)) candidates.push_back(&o);
  }
  if (candidates.size() == 1) return candidates.front();
  if (candidates.empty())
    return Status::invalidArgument("'--" + std::string(given) + "' is not an sbatch option");
  std::string names;
  for (const auto* o : candidates) names += (names.empty() ? "--" : ", --") + std::string(o->name);
  return Status::invalidArgument("'--" + std::string(given) + "' is ambiguous: it could be " + names);
}

}  // namespace

StatusOr<std::vector<std::string>> sbatchWords(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (true) {
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size()) break;
    std::string word;
    char quote = 0;
    for (; i < line.size() && (quote || !blank(line[i])); ++i) {
      const char c = line[i];
      if (c == '\\') {
        if (++i < line.size()) word += line[i];
      } else if (quote) {
        if (c == quote) {
          quote = 0;
        } else {
          word += c;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#') {
        return Status::invalidArgument("an unquoted '#' (sbatch reads the rest of the line as a comment)");
      } else {
        word += c;
      }
    }
    if (quote) return Status::invalidArgument(std::string("an unterminated ") + quote + " quote");
    words.push_back(std::move(word));
  }
  return words;
}

StatusOr<std::vector<SbatchOption>> parseSbatchLine(std::string_view line) {
  auto split = sbatchWords(line);
  if (!split) return split.status();
  const std::vector<std::string>& words = split.value();
  std::vector<SbatchOption> out;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& word = words[w];
    const auto needValue = [&](SbatchOption& o, const std::string& shown) -> Status {
      if (w + 1 >= words.size()) return Status::invalidArgument("'" + shown + "' needs a value");
      o.hasValue = true;
      o.value = words[++w];
      o.written += " " + o.value;
      return Status::ok();
    };
    if (word == "--") return Status::invalidArgument("'--' (the end of the options) has no place here");
    if (word.starts_with("--")) {
      const auto eq = word.find('=');
      const std::string given = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      auto spec = byLong(given);
      if (!spec) return spec.status();
      SbatchOption o{std::string(spec.value()->name), word, false, {}};
      if (eq != std::string::npos) {
        if (spec.value()->arg == Arg::kNone)
          return Status::invalidArgument("'--" + o.name + "' takes no value (" + word + ")");
        o.hasValue = true;
        o.value = word.substr(eq + 1);
      } else if (spec.value()->arg == Arg::kRequired) {
        if (Status s = needValue(o, word); !s) return s;
      }
      out.push_back(std::move(o));
      continue;
    }
    if (word.size() < 2 || word[0] != '-')
      return Status::invalidArgument("'" + word + "' is not an option (one that starts with '-')");
    // A cluster of short options: each without a value, until one that takes
    // the rest of the word (or, if nothing is left and it needs one, the next word).
    for (size_t k = 1; k < word.size(); ++k) {
      const OptionSpec* spec = byShort(word[k]);
      if (!spec)
        return Status::invalidArgument("'-" + std::string(1, word[k]) + "' (in '" + word +
                                       "') is not an sbatch option");
      SbatchOption o{std::string(spec->name), word, false, {}};
      if (spec->arg != Arg::kNone) {
        if (k + 1 < word.size()) {
          o.hasValue = true;
          o.value = word.substr(k + 1);
        } else if (spec->arg == Arg::kRequired) {
          if (Status s = needValue(o, word); !s) return s;
        }
        out.push_back(std::move(o));
        break;
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

std::vector<std::string> unsafeExportNames(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = std::min(value.find(',', start), value.size());
    std::string_view item = value.substr(start, end - start);
    start = end + 1;
    std::string_view name = item.substr(0, item.find('='));
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name == "BASH_ENV" || name == "ENV" || name == "SHELLOPTS" || name == "BASHOPTS" || name == "PS4" ||
        name.starts_with("BASH_FUNC_") || name.starts_with("LD_")) {
      out.emplace_back(name);
    }
    if (end == value.size()) break;
  }
  return out;
}

}  // namespace fs::app::cluster

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string_view>

#include "backend/protocol/cmdline/cmdline.h"
#include "backend/protocol/cmdline/cmdline_flags.h"
#include "backend/protocol/cmdline/cmdline_util.h"
#include "backend/protocol/cmdline/shell_words.h"
#include "backend/protocol/config/hf_lm_config.h"
#include "backend/protocol/config/model_catalog.h"
#include "backend/protocol/config/schema.h"
#include "backend/protocol/config/shard_pattern.h"

namespace fs::protocol {
namespace {

// NOTE [s3 shard lists]: train.py turns a shard list starting with "s3" into
// "pipe:aws s3 cp <list> -", pasting the text into a shell command as it is:
// a list with a space, a quote, ';', $(...) or backticks would run more than
// aws. Here each "::" part becomes its own command with the part as one
// single-quoted argument (quoteShellWord). Brace patterns still expand, inside
// the quotes, because the shard list is expanded as text before the shell
// sees it, and quoting maps each character on its own ("'" to '\''), so an
// expansion of the quoted part is the quoted expansion of the part. Splitting
// at "::" first also stops "s3://x::pipe:CMD" from smuggling in a pipe of its
// own (train.py's one command would break at the "::" anyway). Brace
// expansion drops a backslash and keeps the character after it (NOTE
// [braceexpand grammar] in shard_pattern.h), so every backslash of the
// quoted word (the quoting's own '\'' and the list's) is written twice: the
// shell sees the quoted word, expanded.
std::string awsPipeShards(const std::string& list) {
  const std::vector<std::string> parts = shardSpecParts(list);
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += "::";
    if (parts[i].empty()) continue;  // "" stays an error
    out += "pipe:aws s3 cp ";
    for (const char c : quoteShellWord(parts[i])) out += c == '\\' ? std::string("\\\\") : std::string(1, c);
    out += " -";
  }
  return out;
}

using namespace cmdline_detail;  // NOLINT: the flag tables and helpers

enum class Prog { kNone, kEnv, kPython, kTorchrun, kSrun };

// ------------------------------------------------------------------ import

class Importer {
 public:
  CmdlineImport run(const std::vector<std::string>& words);

 private:
  struct Assign {
    std::string flag;   // as written, for messages
    std::string value;  // raw ("" for a switch)
    const TrainFlag* train = nullptr;
    std::string path;  // launcher options
  };
  struct PrefixEnd {
    size_t next;  // the script's index, or the first train.py flag's
    bool script;
  };

  PrefixEnd parsePrefix(const std::vector<std::string>& w, size_t end, bool scriptKnown);
  size_t launcherOption(const std::vector<std::string>& w, size_t i, size_t end, Prog prog);
  void parseTrainFlags(const std::vector<std::string>& w, size_t begin);
  const TrainFlag* lookupTrainFlag(const std::string& name, const std::string& written);
  void finish();
  void applyTrain(const Assign& a);
  bool set(const std::string& path, const std::string& flag, const std::string& raw);
  std::string count(const std::string& flag, const std::string& raw, char rangeSep);

  void unknown(std::string w) { out_.unknownFlags.push_back(std::move(w)); }
  void ignore(std::string w) { out_.ignoredFlags.push_back(std::move(w)); }

  CmdlineImport out_;
  std::vector<Assign> assigns_;
  std::map<std::string, std::string> seen_;  // target -> flag that set it
  bool mentioned_[2] = {false, false};
  bool torchrun_ = false, srun_ = false;
  std::optional<std::string> srunNodes_, srunTasks_, srunTasksPerNode_;
};

CmdlineImport Importer::run(const std::vector<std::string>& words) {
  out_.config = defaultRunConfig();
  if (words.empty()) {
    out_.problems.push_back(error("", "the command line is empty"));
    return std::move(out_);
  }
  const auto script = std::find_if(words.begin(), words.end(), [](const std::string& w) {
    return endsWith(w, "train.py") && !startsWith(w, "-");  // not "--log_dir=/x/train.py"
  });
  size_t flagsBegin = 0;
  if (script != words.end()) {
    const size_t s = static_cast<size_t>(script - words.begin());
    parsePrefix(words, s, true);
    flagsBegin = s + 1;
  } else {
    const PrefixEnd r = parsePrefix(words, words.size(), false);
    if (r.script) {
      out_.problems.push_back(warning(
          "",
          inQuotes(words[r.next]) + " is not train.py; its arguments are read as OpenFlamingo train.py's"));
      flagsBegin = r.next + 1;
    } else {
      flagsBegin = r.next;
      if (r.next == words.size() && (torchrun_ || srun_ || isProgram(words.front()))) {
        out_.problems.push_back(
            error("", "no training script: expected a word ending in train.py after the launcher"));
      }
    }
  }
  parseTrainFlags(words, flagsBegin);
  finish();
  return std::move(out_);
}

Importer::PrefixEnd Importer::parsePrefix(const std::vector<std::string>& w, size_t end, bool scriptKnown) {
  Prog prog = Prog::kNone;
  size_t i = 0;
  while (i < end) {
    const std::string& word = w[i];
    if ((prog == Prog::kNone || prog == Prog::kEnv) && isEnvAssignment(word)) {
      ignore(word);
      ++i;
      continue;
    }
    if (!looksLikeOption(word)) {
      const std::string b = basename(word);
      if (b == "env" && prog == Prog::kNone) {
        prog = Prog::kEnv;
      } else if (isPython(b)) {
        prog = Prog::kPython;
      } else if (b == "torchrun") {
        prog = Prog::kTorchrun;
        torchrun_ = true;
      } else if (b == "srun") {
        prog = Prog::kSrun;
        srun_ = true;
      } else if (!scriptKnown) {
        return {i, true};
      } else {
        unknown(word);
        out_.problems.push_back(
            warning("", inQuotes(word) + " before the training script is not a launcher Flamingo Studio "
                                         "reads (torchrun, python, srun); it is listed as unknown"));
      }
      ++i;
      continue;
    }
    if (prog == Prog::kNone || prog == Prog::kEnv) {
      if (!scriptKnown) return {i, false};  // just the flags
      unknown(word);
      ++i;
      continue;
    }
    if (prog == Prog::kPython && (word == "-m" || (startsWith(word, "-m") && word.size() > 2))) {
      const bool attached = word.size() > 2;
      const std::string module = attached ? word.substr(2) : (i + 1 < end ? w[i + 1] : "");
      const size_t next = i + (attached ? 1 : 2);
      if (module == "torch.distributed.run" || module == "torch.distributed.launch") {
        prog = Prog::kTorchrun;
        torchrun_ = true;
        i = next;
      } else if (!scriptKnown && !attached && !module.empty()) {
        return {i + 1, true};
      } else {
        unknown(attached ? word : word + " " + module);
        i = std::min(next, end);
      }
      continue;
    }
    if (prog == Prog::kPython && word == "-c") {
      out_.problems.push_back(error("", "python -c runs inline code, not OpenFlamingo's train.py"));
      unknown(word);
      ++i;
      continue;
    }
    i = launcherOption(w, i, end, prog);
  }
  return {end, scriptKnown};
}

// One launcher option at w[i]; returns the index after it (and its value).
size_t Importer::launcherOption(const std::vector<std::string>& w, size_t i, size_t end, Prog prog) {
  const std::string& word = w[i];
  const auto& opts = prog == Prog::kTorchrun ? torchrunOpts()
                     : prog == Prog::kSrun   ? srunOpts()
                                             : pythonOpts();
  std::string name = word, value;
  bool hasValue = false;
  if (startsWith(word, "--") && word.find('=') != std::string::npos) {
    name = word.substr(0, word.find('='));
    value = word.substr(word.find('=') + 1);
    hasValue = true;
  }
  if (prog == Prog::kTorchrun && startsWith(name, "--")) std::replace(name.begin() + 2, name.end(), '-', '_');
  const LauncherOpt* opt = findOpt(opts, name);
  if (opt == nullptr && !startsWith(word, "--") && word.size() > 2) {  // "-N2": short option, attached value
    const LauncherOpt* shortOpt = findOpt(opts, word.substr(0, 2));
    if (shortOpt != nullptr && shortOpt->takesValue) {
      opt = shortOpt;
      name = word.substr(0, 2);
      value = word.substr(2);
      hasValue = true;
    }
  }
  size_t next = i + 1;
  std::string written = word;
  if (opt == nullptr) {
    if (!hasValue && next < end && !looksLikeOption(w[next]) && !isProgram(w[next])) {
      written += " " + w[next];
      ++next;
    }
    unknown(written);
    return next;
  }
  if (opt->takesValue && !hasValue) {
    if (next < end && !looksLikeOption(w[next])) {
      value = w[next];
      written += " " + value;
      ++next;
    } else {
      out_.problems.push_back(error("", word + " expects a value"));
      unknown(word);
      return next;
    }
  }
  const std::string_view target = opt->target;
  if (target.empty()) {
    ignore(written);
  } else if (target == "@nodes") {
    srunNodes_ = count(word, value, '-');
  } else if (target == "@ntasks") {
    srunTasks_ = count(word, value, '-');
  } else if (target == "@tasks_per_node") {
    srunTasksPerNode_ = value;
  } else if (target == "@nnodes") {
    assigns_.push_back({name, count(word, value, ':'), nullptr, "launch.nnodes"});
  } else if (target == "@nproc") {
    if (value == "gpu" || value == "cpu" || value == "auto") {
      out_.problems.push_back(warning("launch.nproc_per_node",
                                      name + " " + value +
                                          " depends on the machine it runs on; launch.nproc_per_node is "
                                          "left at " +
                                          std::to_string(out_.config.launch.nproc_per_node),
                                      "set launch.nproc_per_node to the number of GPUs per node"));
    } else {
      assigns_.push_back({name, value, nullptr, "launch.nproc_per_node"});
    }
  } else if (target == "@endpoint") {
    // host:port, [v6]:port or host
    std::string host = value, port;
    const auto colon = value.rfind(':');
    if (colon != std::string::npos && value.find(']', colon) == std::string::npos) {
      host = value.substr(0, colon);
      port = value.substr(colon + 1);
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    assigns_.push_back({name, host, nullptr, "launch.master_addr"});
    if (!port.empty()) assigns_.push_back({name, port, nullptr, "launch.master_port"});
  } else {
    assigns_.push_back({name, value, nullptr, std::string(target)});
  }
  return next;
}

// "4", or a range "1:4" (torchrun) / "2-4" (srun): the upper bound, with a warning.
std::string Importer::count(const std::string& flag, const std::string& raw, char rangeSep) {
  const auto sep = raw.find(rangeSep);
  if (sep == std::string::npos || sep == 0) return raw;
  const std::string upper = raw.substr(sep + 1);
  out_.problems.push_back(warning("launch", flag + " " + raw +
                                                " is a range; the import uses its upper bound " + upper +
                                                " (Flamingo Studio runs a fixed world)"));
  return upper;
}

const TrainFlag* Importer::lookupTrainFlag(const std::string& name, const std::string& written) {
  for (const auto& f : trainFlags()) {
    if (f.name == name) return &f;
  }
  // argparse accepts any unambiguous prefix of a long option.
  std::vector<const TrainFlag*> matches;
  for (const auto& f : trainFlags()) {
    if (startsWith(f.name, name) && name.size() > 2) matches.push_back(&f);
  }
  if (matches.size() == 1) {
    out_.problems.push_back(warning("",
                                    written + ": read as " + std::string(matches[0]->name) +
                                        " (train.py's argparse accepts an unambiguous prefix)",
                                    "write the full flag name"));
    return matches[0];
  }
  if (matches.size() > 1) {
    std::string names;
    for (const auto* m : matches) names += (names.empty() ? "" : ", ") + std::string(m->name);
    out_.problems.push_back(error("", written + " is ambiguous: it could be " + names));
  }
  return nullptr;
}

void Importer::parseTrainFlags(const std::vector<std::string>& w, size_t begin) {
  for (size_t i = begin; i < w.size(); ++i) {
    const std::string& word = w[i];
    if (!word.empty() && word.find_first_not_of(" \t\r\n") == std::string::npos) {
      out_.problems.push_back(
          warning("",
                  "a word made only of whitespace was ignored (usually a backslash followed by "
                  "a space instead of a line break)"));
      continue;
    }
    if (!looksLikeOption(word)) {
      unknown(word);  // train.py takes no positional arguments
      continue;
    }
    std::string name = word, value;
    bool hasValue = false;
    if (startsWith(word, "--") && word.find('=') != std::string::npos) {
      name = word.substr(0, word.find('='));
      value = word.substr(word.find('=') + 1);
      hasValue = true;
    }
    const TrainFlag* f = lookupTrainFlag(name, word);
    if (f == nullptr) {
      std::string written = word;
      if (!hasValue && i + 1 < w.size() && !looksLikeOption(w[i + 1])) written += " " + w[++i];
      unknown(written);
      continue;
    }
    std::string written = word;
    if (f->takesValue && !hasValue) {
      if (i + 1 < w.size() && !looksLikeOption(w[i + 1])) {
        value = w[++i];
        written += " " + value;
      } else {
        out_.problems.push_back(
            error(std::string(f->target.empty() || f->slot != Slot::kNone ? "" : f->target),
                  std::string(f->name) + " expects a value"));
        continue;
      }
    } else if (!f->takesValue && hasValue) {
      out_.problems.push_back(
          error("", word + ": " + std::string(f->name) + " takes no value (train.py's argparse rejects it)",
                "write " + std::string(f->name) + " alone"));
      continue;
    }
    if (f->target.empty()) {
      ignore(written);
      continue;
    }
    const std::string key =
        std::string(f->slot == Slot::kNone ? "" : slotName(f->slot)) + ":" + std::string(f->target);
    if (auto it = seen_.find(key); it != seen_.end()) {
      out_.problems.push_back(warning(
          "", std::string(f->name) + " repeats " + it->second + "; the last one wins, as in train.py"));
    }
    seen_[key] = std::string(f->name);
    if (f->slot != Slot::kNone) mentioned_[f->slot == Slot::kLaion ? 0 : 1] = true;
    if (value.find_first_of("$`") != std::string::npos) {
      out_.problems.push_back(warning("",
                                      std::string(f->name) + " " + inQuotes(value) +
                                          " contains a shell expansion; it was kept as written, not expanded",
                                      "replace it with the value it stands for"));
    }
    assigns_.push_back({std::string(f->name), value, f, ""});
  }
}

// Parses `raw` as the field at `path` and sets it. REQUIRES: path is valid.
bool Importer::set(const std::string& path, const std::string& flag, const std::string& raw) {
  auto ref = resolvePath(runConfigSchema(), &out_.config, path);
  const EntrySpec& spec = *ref->spec;
  const std::string kept = "; " + path + " is left at " + displayValue(spec, spec.get(ref->owner));
  Value v;
  switch (spec.type) {
    case FieldType::kString:
    case FieldType::kEnum:
      v = raw;
      break;  // verbatim: argparse keeps spaces
    case FieldType::kBool:
      v = true;
      break;
    default: {
      auto parsed = valueFromText(spec, raw, flag);
      if (!parsed) {
        out_.problems.push_back(error(path, parsed.status().message() + kept));
        return false;
      }
      v = parsed.value();
    }
  }
  if (const std::string why = checkValue(spec, v); !why.empty()) {
    out_.problems.push_back(error(path, flag + " " + inQuotes(raw) + ": " + why + kept));
    return false;
  }
  spec.set(ref->owner, v);
  return true;
}

void Importer::applyTrain(const Assign& a) {
  const TrainFlag& f = *a.train;
  RunConfig& c = out_.config;
  if (f.slot != Slot::kNone) {
    const std::string name = slotName(f.slot);
    size_t index = 0;
    while (c.data.datasets[index].name != name) ++index;
    std::string raw = a.value;
    if (f.conv == Conv::kShards && startsWith(raw, "s3")) raw = awsPipeShards(raw);
    set("data.datasets[" + std::to_string(index) + "]." + std::string(f.target), a.flag, raw);
    return;
  }
  const std::string path(f.target);
  switch (f.conv) {
    case Conv::kWorkers:
      for (size_t i = 0; i < c.data.datasets.size(); ++i) {
        if (!set("data.datasets[" + std::to_string(i) + "].workers", a.flag, a.value)) break;
      }
      return;
    case Conv::kFsdpMode:
      set(path, a.flag, "fsdp");
      return;
    case Conv::kPrecision: {
      std::string p = a.value == "amp_bfloat16" ? "amp_bf16" : a.value;
      if (p != "amp_bf16" && p != "bf16" && p != "fp16" && p != "fp32") {
        out_.problems.push_back(
            error(path, a.flag + " " + inQuotes(a.value) +
                            ": train.py accepts amp_bf16, amp_bfloat16, bf16, fp16, fp32; " + path +
                            " is left at " + inQuotes(c.optim.precision)));
        return;
      }
      set(path, a.flag, p);
      return;
    }
    case Conv::kScheduler:
      if (a.value != "constant" && a.value != "linear" && a.value != "cosine") {
        out_.problems.push_back(
            warning(path, a.flag + " " + inQuotes(a.value) +
                              " is not constant, linear or cosine: train.py silently falls back "
                              "to constant, and so does this import"));
        set(path, a.flag, "constant");
        return;
      }
      set(path, a.flag, a.value);
      return;
    case Conv::kSharding:
      if (a.value != "full" && a.value != "hybrid") {
        out_.problems.push_back(error(path, a.flag + " " + inQuotes(a.value) +
                                                ": train.py accepts full or hybrid; " + path +
                                                " is left at " + inQuotes(c.parallel.sharding_strategy)));
        return;
      }
      set(path, a.flag, a.value == "full" ? "full_shard" : "hybrid_shard");
      return;
    case Conv::kBackend:
      if (a.value != "nccl" && a.value != "gloo") {
        out_.problems.push_back(error(path, a.flag + " " + inQuotes(a.value) +
                                                ": Flamingo Studio supports nccl or gloo; " + path +
                                                " is left at " + inQuotes(c.parallel.dist_backend)));
        return;
      }
      set(path, a.flag, a.value);
      return;
    default:
      set(path, a.flag, a.value);
      return;
  }
}

void Importer::finish() {
  RunConfig& c = out_.config;
  // Datasets: those the flags mention, laion first; none mentioned = the defaults.
  if (mentioned_[0] || mentioned_[1]) {
    c.data.datasets.clear();
    if (mentioned_[0]) c.data.datasets.push_back(defaultDataset("laion", "laion"));
    if (mentioned_[1]) c.data.datasets.push_back(defaultDataset("mmc4", "mmc4"));
  }
  // srun: nodes and tasks (a torchrun under srun overrides them below).
  if (srun_) {
    if (srunNodes_) set("launch.nnodes", "srun --nodes", *srunNodes_);
    if (srunTasksPerNode_) {
      set("launch.nproc_per_node", "srun --ntasks-per-node", *srunTasksPerNode_);
    } else if (srunTasks_) {
      const int64_t nodes = c.launch.nnodes;
      auto tasks = valueFromText(*runConfigSchema().find("launch")->section->find("nproc_per_node"),
                                 *srunTasks_, "srun --ntasks");
      if (!tasks) {
        out_.problems.push_back(error("launch.nproc_per_node", tasks.status().message()));
      } else if (std::get<int64_t>(tasks.value()) % nodes != 0) {
        out_.problems.push_back(warning(
            "launch.nproc_per_node",
            "srun --ntasks " + *srunTasks_ + " does not split evenly over " + std::to_string(nodes) +
                " node(s); launch.nproc_per_node is left at " + std::to_string(c.launch.nproc_per_node),
            "give srun --ntasks-per-node"));
      } else {
        set("launch.nproc_per_node", "srun --ntasks",
            std::to_string(std::get<int64_t>(tasks.value()) / nodes));
      }
    } else if (!srunNodes_ && !torchrun_) {
      out_.problems.push_back(warning("launch",
                                      "srun without --nodes or --ntasks-per-node takes the world size from "
                                      "the SLURM allocation (#SBATCH lines), which the line does not show; "
                                      "launch.nnodes and launch.nproc_per_node are left at " +
                                          std::to_string(c.launch.nnodes) + " and " +
                                          std::to_string(c.launch.nproc_per_node),
                                      "set them to the allocation's nodes and tasks per node"));
    }
  }
  for (const Assign& a : assigns_) {
    if (a.train != nullptr) {
      applyTrain(a);
    } else {
      set(a.path, a.flag, a.value);
    }
  }
  // NOTE [Original parameters] (validate.cpp): the engine always steps the original parameters, which
  // train.py does under --fsdp only with --fsdp_use_orig_params; without it the config still says true.
  if (c.parallel.mode == "fsdp" && !seen_.count(":parallel.use_orig_params")) {
    out_.problems.push_back(warning(
        "parallel.use_orig_params",
        "--fsdp without --fsdp_use_orig_params: train.py then puts every trainable parameter in one "
        "weight-decayed optimizer group and trains every embedding row; Flamingo Studio always steps the "
        "original parameters, so parallel.use_orig_params is true and this config trains as train.py "
        "does with --fsdp_use_orig_params",
        "add --fsdp_use_orig_params to the train.py line to compare like with like"));
  }
  if (c.model.lm.tokenizer_path.empty())
    c.model.lm.tokenizer_path = c.model.lm.path;  // train.py: empty = lm_path
  applyKnownShapes(&c.model);
  if (seen_.count(":model.lm.path") && !c.model.lm.path.empty() && !findKnownLm(c.model.lm.path) &&
      !hasHfConfigJson(c.model.lm.path)) {
    out_.problems.push_back(warning("model.lm.path",
                                    "--lm_path " + inQuotes(c.model.lm.path) +
                                        " is not a model Flamingo Studio knows; model.lm family and "
                                        "dimensions stay at the defaults (facebook/opt-1.3b's)",
                                    "set model.lm.* to the checkpoint's config.json"));
  }
  if (seen_.count(":model.vision.path") && !findKnownVision(c.model.vision.path)) {
    out_.problems.push_back(warning("model.vision.path",
                                    "--vision_encoder_path " + inQuotes(c.model.vision.path) +
                                        " is not an OpenCLIP tower Flamingo Studio knows; "
                                        "model.vision dimensions stay at the defaults (ViT-L-14's)",
                                    "set model.vision.*"));
  }
  if (srun_) {
    c.launch.kind = "slurm";
  } else if (torchrun_) {
    c.launch.kind = c.launch.nnodes > 1 ? "ssh" : "local";
  }
}

}  // namespace

CmdlineImport importOpenFlamingoArgs(const std::vector<std::string>& words) {
  return Importer().run(words);
}

CmdlineImport importOpenFlamingoCmdline(const std::string& line) {
  auto words = splitShellWords(line);
  if (!words) {
    CmdlineImport out;
    out.config = defaultRunConfig();
    out.problems.push_back(error("", words.status().message()));
    return out;
  }
  return importOpenFlamingoArgs(words.value());
}

}  // namespace fs::protocol

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

namespace fs::protocol {
namespace {

using namespace cmdline_detail;  // NOLINT: the flag tables and helpers

// ------------------------------------------------------------------ export

const TrainFlag* flagForPath(const std::string& path) {
  for (const auto& f : trainFlags()) {
    if (f.exported && f.slot == Slot::kNone && f.target == path) return &f;
  }
  return nullptr;
}

const TrainFlag* flagForDatasetKey(const std::string& key) {
  for (const auto& f : trainFlags()) {
    if (f.exported && (f.slot != Slot::kNone || f.conv == Conv::kWorkers) && f.target == key) return &f;
  }
  return nullptr;
}

// Which dataset goes to the laion / mmc4 place: the first of each type,
// preferring one with the type's name. -1 = none.
std::array<int, 2> assignSlots(const RunConfig& c) {
  std::array<int, 2> slot = {-1, -1};
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < c.data.datasets.size(); ++i) {
      const auto& d = c.data.datasets[i];
      const int s = d.type == "laion" ? 0 : d.type == "mmc4" ? 1 : -1;
      if (s < 0 || slot[s] >= 0) continue;
      if (pass == 1 || d.name == d.type) slot[s] = static_cast<int>(i);
    }
  }
  return slot;
}

const std::vector<std::string> kLmShapeKeys = {"family", "vocab_size", "width",         "layers",
                                               "heads",  "ffn_dim",    "max_positions", "tied_head"};
const std::vector<std::string> kVisionShapeKeys = {"image_size", "patch_size", "width",      "layers",
                                                   "heads",      "mlp_ratio",  "output_dim", "quick_gelu"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Why `ours` at `path` (a canonical path; `key` its last component) did not
// survive the line, for the notExpressible message.
std::string reasonFor(const std::string& path, const std::string& key, const Value& ours,
                      const RunConfig& c) {
  const bool inDataset = startsWith(path, "data.datasets[");
  const auto str = [&] {
    return std::holds_alternative<std::string>(ours) ? std::get<std::string>(ours) : "";
  };
  if (inDataset) {
    if (key == "name") return "a train.py line names its datasets laion and mmc4";
    if (key == "workers")
      return "train.py has one --workers for every dataset; the line carries the first one's";
    if (key == "shards" && startsWith(str(), "s3"))
      return "train.py rewrites shard lists that start with 's3' into 'pipe:aws s3 cp <list> -'";
    if (flagForDatasetKey(key) == nullptr) return "train.py has no option for it";
    return "the line cannot carry this value";
  }
  if (path == "model.lm.tokenizer_path" && str().empty())
    return "train.py reads an empty --tokenizer_path as 'the tokenizer of --lm_path'";
  if (startsWith(path, "model.lm.") && contains(kLmShapeKeys, key))
    return "train.py takes the language model's shape from --lm_path " + inQuotes(c.model.lm.path) +
           (findKnownLm(c.model.lm.path) || hasHfConfigJson(c.model.lm.path)
                ? ""
                : ", which import does not know");
  if (startsWith(path, "model.vision.") && contains(kVisionShapeKeys, key))
    return "train.py takes the vision tower's shape from --vision_encoder_path " +
           inQuotes(c.model.vision.path) + " and --vision_encoder_pretrained";
  if (path == "optim.precision") return "train.py's --precision accepts only fp32, bf16, fp16 and amp_bf16";
  if (path == "parallel.sharding_strategy")
    return "train.py's --fsdp_sharding_strategy has only full and hybrid";
  if (path == "parallel.device")
    return str() == "cpu"
               ? "train.py has no option to train on the CPU; it takes cuda:<local rank> whenever CUDA "
                 "is available"
               : "train.py has no device option; it takes cuda:<local rank> whenever CUDA is "
                 "available, which is what auto means";
  if (path == "parallel.cpu_offload")
    return "train.py v2.0 has no --fsdp_cpu_offload; parameters stay on the GPU";
  if (path == "launch.kind")
    return "the line is a torchrun command: one node imports as local, several as ssh";
  if (path == "launch.hosts") return "a torchrun line runs on every node and names no hosts";
  if (path == "launch.env")
    return "a train.py line carries no environment: set the variables where torchrun starts, on every node";
  if (startsWith(path, "launch.slurm.")) return "the line is a torchrun command, not a SLURM job";
  if (flagForPath(path) == nullptr) return "train.py has no option for it";
  return "the line cannot carry this value";
}

struct FieldVal {
  std::string path;
  std::string key;
  const EntrySpec* spec;
  Value value;
};

std::vector<FieldVal> collect(const SectionSpec& section, const void* obj, const std::string& prefix,
                              bool skipDatasets) {
  std::vector<FieldVal> out;
  forEachField(section, obj, [&](const std::string& path, const EntrySpec& spec, const void* owner) {
    if (skipDatasets && startsWith(path, "data.datasets[")) return;
    out.push_back({prefix + path, spec.key, &spec, spec.get(owner)});
  });
  return out;
}

class Comparer {
 public:
  Comparer(const RunConfig& ours, const CmdlineImport& back) : ours_(ours), back_(back) {}

  std::vector<Problem> run(const std::array<int, 2>& slot) {
    diff(collect(runConfigSchema(), &ours_, "", true), collect(runConfigSchema(), &back_.config, "", true));
    const auto& ds = ours_.data.datasets;
    const auto& theirs = back_.config.data.datasets;
    for (size_t i = 0; i < ds.size(); ++i) {
      const std::string prefix = "data.datasets[" + std::to_string(i) + "].";
      const int s = static_cast<int>(i) == slot[0] ? 0 : static_cast<int>(i) == slot[1] ? 1 : -1;
      if (s < 0) {
        const int taken = ds[i].type == "laion" ? slot[0] : ds[i].type == "mmc4" ? slot[1] : -1;
        out_.push_back(error(prefix.substr(0, prefix.size() - 1),
                             "cannot write dataset " + inQuotes(ds[i].name) + " (type " + ds[i].type +
                                 ") on a train.py line: it trains one laion and one mmc4 dataset" +
                                 (taken >= 0 ? ", and " + inQuotes(ds[taken].name) + " already takes the " +
                                                   ds[i].type + " place"
                                             : ""),
                             "train with more than two datasets from the YAML config"));
        continue;
      }
      const auto it = std::find_if(theirs.begin(), theirs.end(), [&](const DatasetConfig& d) {
        return d.name == slotName(s == 0 ? Slot::kLaion : Slot::kMmc4);
      });
      if (it == theirs.end())
        continue;  // cannot happen: export writes --batch_size_X for every place it fills
      diff(collect(datasetSection(), &ds[i], prefix, false), collect(datasetSection(), &*it, prefix, false));
    }
    if (slot[0] >= 0 && slot[1] >= 0 && slot[1] < slot[0]) {
      out_.push_back(error("data.datasets",
                           "cannot write " + inQuotes(ds[slot[1]].name) + " before " +
                               inQuotes(ds[slot[0]].name) +
                               " on a train.py line: it always lists laion first",
                           "put the laion dataset first"));
    }
    if (slot[0] < 0 && slot[1] < 0) {
      out_.push_back(error("data.datasets",
                           "cannot write 'no laion and no mmc4 dataset' on a train.py line: "
                           "without dataset flags it means train.py's two default datasets"));
    }
    return std::move(out_);
  }

 private:
  void diff(const std::vector<FieldVal>& ours, const std::vector<FieldVal>& theirs) {
    for (size_t i = 0; i < ours.size() && i < theirs.size(); ++i) {
      if (ours[i].value == theirs[i].value) continue;
      const FieldVal& f = ours[i];
      std::string reason = reasonFor(f.path, f.key, f.value, ours_);
      for (const auto& p : back_.problems) {  // the value was on the line but import rejected it
        if (p.isError() && p.path == f.path)
          reason = "import rejects it: " + p.message.substr(0, p.message.find("; " + f.path));
      }
      out_.push_back(error(f.path, "cannot write " + displayValue(*f.spec, f.value) +
                                       " on a train.py line (" + reason + "); the line means " +
                                       displayValue(*f.spec, theirs[i].value)));
    }
  }

  const RunConfig& ours_;
  const CmdlineImport& back_;
  std::vector<Problem> out_;
};

// Things the line does say, but OpenFlamingo's train.py would reject or crash on.
std::vector<Problem> trainPyWarnings(const RunConfig& c, const std::array<int, 2>& slot) {
  std::vector<Problem> w;
  const auto& ds = c.data.datasets;
  if ((slot[0] < 0) != (slot[1] < 0)) {
    const char* missing = slot[0] < 0 ? "laion" : "mmc4";
    w.push_back(warning("data.datasets",
                        std::string("train.py always trains a laion and an mmc4 dataset together and "
                                    "stops without --") +
                            missing +
                            "_shards; the line imports back as this config, but only "
                            "Flamingo Studio can run it"));
  }
  for (int s = 0; s < 2; ++s) {
    if (slot[s] >= 0 && ds[slot[s]].shards.empty()) {
      w.push_back(warning("data.datasets[" + std::to_string(slot[s]) + "].shards",
                          std::string("empty: train.py needs --") +
                              slotName(s == 0 ? Slot::kLaion : Slot::kMmc4) + "_shards"));
    }
  }
  if (slot[0] >= 0 && slot[1] >= 0 && ds[slot[0]].batch_size > 0 && ds[slot[1]].batch_size > 0) {
    const auto& l = ds[slot[0]];
    const auto& m = ds[slot[1]];
    const int64_t a = l.samples_per_epoch / l.batch_size, b = m.samples_per_epoch / m.batch_size;
    if (a != b) {
      w.push_back(
          warning("data.datasets",
                  "train.py asserts train_num_samples_laion // batch_size_laion == train_num_samples_mmc4 // "
                  "batch_size_mmc4, here " +
                      std::to_string(a) + " != " + std::to_string(b)));
    }
  }
  if (c.optim.precision == "bf16" || c.optim.precision == "fp16") {
    w.push_back(warning("optim.precision",
                        "train.py accepts --precision " + c.optim.precision +
                            " but crashes with it (it casts token ids to floating point)",
                        "use amp_bf16 with train.py"));
  }
  if (c.model.lm.path.empty()) w.push_back(warning("model.lm.path", "empty: train.py needs --lm_path"));
  return w;
}

}  // namespace

CmdlineExport exportOpenFlamingoCmdline(const RunConfig& config) {
  RunConfig c = config;  // resolvePath needs a mutable object
  RunConfig defaults = defaultRunConfig();
  const std::array<int, 2> slot = assignSlots(c);

  std::vector<std::vector<std::string>> groups;
  std::vector<std::string> launcher = {"torchrun", "--nnodes=" + std::to_string(c.launch.nnodes),
                                       "--nproc_per_node=" + std::to_string(c.launch.nproc_per_node)};
  if (c.launch.nnodes > 1 || c.launch.master_addr != defaults.launch.master_addr ||
      c.launch.master_port != defaults.launch.master_port) {
    launcher.push_back("--master_addr=" + c.launch.master_addr);
    launcher.push_back("--master_port=" + std::to_string(c.launch.master_port));
  }
  launcher.push_back("train.py");
  groups.push_back(launcher);

  auto emit = [&](std::string_view name, const std::string& text) {
    if (!text.empty() && text[0] == '-') {  // argparse would take it for an option
      groups.push_back({std::string(name) + "=" + text});
    } else {
      groups.push_back({std::string(name), text});
    }
  };
  for (const TrainFlag& f : trainFlags()) {
    if (!f.exported || f.target.empty()) continue;
    if (f.slot != Slot::kNone) {
      const int index = slot[f.slot == Slot::kLaion ? 0 : 1];
      if (index < 0) continue;
      const std::string key(f.target);
      const std::string path = "data.datasets[" + std::to_string(index) + "]." + key;
      auto ref = resolvePath(runConfigSchema(), &c, path);
      const Value v = ref->spec->get(ref->owner);
      DatasetConfig def = defaultDataset(slotName(f.slot), slotName(f.slot));
      const Value dv = ref->spec->get(&def);
      const bool always = key == "batch_size" || key == "samples_per_epoch";
      if (key == "shards" ? !std::get<std::string>(v).empty() : (always || v != dv)) {
        emit(f.name, valueToText(*ref->spec, v));
      }
      continue;
    }
    const std::string path(f.target);
    switch (f.conv) {
      case Conv::kWorkers: {
        const int first = slot[0] >= 0 ? slot[0] : slot[1];
        if (first >= 0 && c.data.datasets[first].workers != defaultDataset("laion", "laion").workers) {
          emit(f.name, std::to_string(c.data.datasets[first].workers));
        }
        break;
      }
      case Conv::kFsdpMode:
        if (c.parallel.mode == "fsdp") groups.push_back({std::string(f.name)});
        break;
      case Conv::kOrigParams:  // train.py reads it under --fsdp only; with it, train.py trains as we do
        if (c.parallel.mode == "fsdp" && c.parallel.use_orig_params) groups.push_back({std::string(f.name)});
        break;
      case Conv::kSharding:
        if (c.parallel.sharding_strategy == "hybrid_shard") emit(f.name, "hybrid");
        break;
      case Conv::kPrecision:
        if (c.optim.precision != defaults.optim.precision && c.optim.precision != "amp_fp16") {
          emit(f.name, c.optim.precision);
        }
        break;
      case Conv::kBackend:
        if (c.parallel.dist_backend == "nccl" || c.parallel.dist_backend == "gloo")
          emit(f.name, c.parallel.dist_backend);
        break;
      case Conv::kTokenizer:
        if (!c.model.lm.tokenizer_path.empty() &&
            c.model.lm.tokenizer_path != defaults.model.lm.tokenizer_path) {
          emit(f.name, c.model.lm.tokenizer_path);
        }
        break;
      default: {
        auto ref = resolvePath(runConfigSchema(), &c, path);
        const Value v = ref->spec->get(ref->owner);
        if (v == fieldValue(defaults, path)) break;
        if (f.takesValue) {
          emit(f.name, valueToText(*ref->spec, v));
        } else if (std::get<bool>(v)) {
          groups.push_back({std::string(f.name)});
        }
      }
    }
  }

  CmdlineExport out;
  for (size_t g = 0; g < groups.size(); ++g) {
    out.argv.insert(out.argv.end(), groups[g].begin(), groups[g].end());
    if (g > 0) out.line += " \\\n  ";
    out.line += joinShellWords(groups[g]);
  }

  const CmdlineImport back = importOpenFlamingoArgs(out.argv);
  out.notExpressible = Comparer(config, back).run(slot);
  if (!hasErrors(out.notExpressible) && !(back.config == config)) {
    out.notExpressible.push_back(
        error("", "internal: the exported line does not import back to this config"));
  }
  auto warnings = trainPyWarnings(config, slot);
  out.notExpressible.insert(out.notExpressible.end(), warnings.begin(), warnings.end());
  return out;
}

}  // namespace fs::protocol

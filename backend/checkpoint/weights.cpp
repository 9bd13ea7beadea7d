// Pretrained and foreign weights into the model (weights.h).
#include "backend/checkpoint/weights.h"

#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/config/model_catalog.h"
#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/tensorfile/safetensors.h"
#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/torch_file.h"
#include "backend/tensorfile/weight_set.h"

namespace fs::checkpoint {

using protocol::Status;
using protocol::StatusOr;
namespace tf = fs::tensorfile;

namespace {

bool startsWith(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// `s` with its message prefixed (same code).
Status withPrefix(const Status& s, const std::string& prefix) {
  const std::string m = prefix + s.message();
  switch (s.code()) {
    case Status::Code::kNotFound:
      return Status::notFound(m);
    case Status::Code::kCorruption:
      return Status::corruption(m);
    case Status::Code::kIOError:
      return Status::ioError(m);
    case Status::Code::kUnsupported:
      return Status::unsupported(m);
    default:
      return Status::invalidArgument(m);
  }
}

bool looksLikeZip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {0, 0};
  in.read(magic, 2);
  return in.gcount() == 2 && magic[0] == 'P' && magic[1] == 'K';
}

// Strips `module.` when every key carries it (DistributedDataParallel's prefix).
void stripModulePrefix(StateDict* sd) {
  if (sd->empty()) return;
  for (const auto& [k, v] : *sd) {
    if (!startsWith(k, "module.")) return;
  }
  StateDict out;
  for (auto& [k, v] : *sd) out.emplace(k.substr(7), v);
  *sd = std::move(out);
}

}  // namespace

StatusOr<torch::Tensor> tensorFromFile(const tf::TorchFile& file, const tf::TensorRef& ref,
                                       const std::string& name) {
  if (ref.isMeta) return Status::unsupported(file.path() + ": '" + name + "' is a meta tensor (no data)");
  auto view = file.view(ref);
  if (!view) return withPrefix(view.status(), file.path() + ": '" + name + "': ");
  auto t = toTorch(view.value());
  if (!t) return withPrefix(t.status(), file.path() + ": '" + name + "': ");
  return t;
}

StatusOr<StateDict> stateDictFromSection(const tf::TorchFile& file, const tf::PyValue& section) {
  tf::FlattenOptions options;
  options.includeSequences = false;
  auto named = tf::flattenTensors(section, options);
  if (!named) return withPrefix(named.status(), file.path() + ": ");
  StateDict out;
  for (const auto& nt : named.value()) {
    auto t = tensorFromFile(file, *nt.tensor, nt.name);
    if (!t) return t.status();
    out.emplace(nt.name, std::move(t.value()));
  }
  return out;
}

namespace {

std::optional<double> number(const tf::PyValue* v) {
  return v ? v->asDouble() : std::nullopt;
}

// optimizer.state_dict() of torch.optim.AdamW -> ours; nullopt + note when it is not one.
std::optional<step::OptimizerStateDict> parseOptimizer(const tf::TorchFile& file, const tf::PyValue& opt,
                                                       std::string* note) {
  const tf::PyValue* state = opt.find("state");
  const tf::PyValue* groups = opt.find("param_groups");
  if (!state || !state->isDict() || !groups || !groups->isSequence()) {
    *note = "optimizer_state_dict has no state / param_groups";
    return std::nullopt;
  }
  step::OptimizerStateDict out;
  for (const auto& [key, value] : state->entries) {
    auto index = key->asInt();
    if (!index || !value->isDict()) {
      *note = "optimizer state key " + tf::keyToString(*key) + " is not an int -> dict entry";
      return std::nullopt;
    }
    step::AdamWParamStateDict p;
    p.index = *index;
    p.name = "#" + std::to_string(*index);
    const tf::PyValue* step = value->find("step");
    const tf::PyValue* m = value->find("exp_avg");
    const tf::PyValue* v = value->find("exp_avg_sq");
    if (!step || !m || !v || !m->isTensor() || !v->isTensor()) {
      *note = "optimizer state " + std::to_string(*index) + " is not AdamW's {step, exp_avg, exp_avg_sq}";
      return std::nullopt;
    }
    if (step->isTensor()) {
      auto t = tensorFromFile(file, *step->tensor, "step");
      if (!t) {
        *note = t.status().message();
        return std::nullopt;
      }
      p.step = t.value().to(torch::kFloat32).reshape({});
    } else if (auto s = step->asDouble()) {
      p.step = torch::tensor(static_cast<float>(*s));
    } else {
      *note = "optimizer state " + std::to_string(*index) + ": step is not a number";
      return std::nullopt;
    }
    auto tm = tensorFromFile(file, *m->tensor, "exp_avg");
    auto tv = tensorFromFile(file, *v->tensor, "exp_avg_sq");
    if (!tm || !tv) {
      *note = (!tm ? tm.status() : tv.status()).message();
      return std::nullopt;
    }
    p.expAvg = tm.value();
    p.expAvgSq = tv.value();
    out.state.push_back(std::move(p));
  }
  std::sort(out.state.begin(), out.state.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  for (const auto& g : groups->items) {
    if (!g->isDict()) {
      *note = "optimizer param_groups entry is not a dict";
      return std::nullopt;
    }
    step::AdamWGroupStateDict group;
    auto lr = number(g->find("lr"));
    if (!lr) {
      *note = "optimizer param group without lr";
      return std::nullopt;
    }
    group.lr = *lr;
    if (const tf::PyValue* betas = g->find("betas");
        betas && betas->isSequence() && betas->items.size() == 2) {
      group.beta1 = betas->items[0]->asDouble().value_or(0.9);
      group.beta2 = betas->items[1]->asDouble().value_or(0.999);
    }
    group.eps = number(g->find("eps")).value_or(1e-8);
    group.weightDecay = number(g->find("weight_decay")).value_or(0.0);
    if (const tf::PyValue* b = g->find("amsgrad")) group.amsgrad = b->asInt().value_or(0) != 0;
    if (const tf::PyValue* b = g->find("maximize")) group.maximize = b->asInt().value_or(0) != 0;
    if (const tf::PyValue* b = g->find("capturable")) group.capturable = b->asInt().value_or(0) != 0;
    if (auto lr0 = number(g->find("initial_lr"))) group.initialLr = *lr0;
    const tf::PyValue* params = g->find("params");
    if (!params || !params->isSequence()) {
      *note = "optimizer param group without params";
      return std::nullopt;
    }
    for (const auto& i : params->items) {
      auto idx = i->asInt();
      if (!idx) {
        *note = "optimizer param group: params are not ints";
        return std::nullopt;
      }
      group.params.push_back(*idx);
    }
    out.paramGroups.push_back(std::move(group));
  }
  return out;
}

std::optional<step::LrSchedulerStateDict> parseScheduler(const tf::PyValue& s, std::string* note) {
  step::LrSchedulerStateDict out;
  const tf::PyValue* base = s.find("base_lrs");
  auto last = s.find("last_epoch") ? s.find("last_epoch")->asInt() : std::nullopt;
  if (!base || !base->isSequence() || !last) {
    *note = "lr_scheduler_state_dict has no base_lrs / last_epoch";
    return std::nullopt;
  }
  for (const auto& b : base->items) out.baseLrs.push_back(b->asDouble().value_or(0.0));
  out.lastEpoch = *last;
  if (const tf::PyValue* c = s.find("_step_count")) out.stepCount = c->asInt().value_or(out.lastEpoch + 1);
  if (const tf::PyValue* l = s.find("_last_lr"); l && l->isSequence()) {
    for (const auto& x : l->items) out.lastLr.push_back(x->asDouble().value_or(0.0));
  }
  return out;
}

std::string notDownloadable(const std::string& key, const std::string& value, const std::string& what,
                            const std::string& example) {
  return key + " '" + value + "': not a local " + what +
         "; Flamingo Studio does not download weights — download it (e.g. " + example + ") and point " + key +
         " at the " + what;
}

// The model's HF LM names (no lang_encoder., no FlamingoLayer path) -> shape.
std::map<std::string, std::vector<int64_t>> lmNames(const model::FlamingoImpl& model) {
  std::map<std::string, std::vector<int64_t>> out;
  const std::string lm = "lang_encoder.";
  for (const auto& [name, t] : model.namedParameters()) {
    if (!startsWith(name, lm) || name.find(".gated_cross_attn_layer.") != std::string::npos) continue;
    std::string hf = name.substr(lm.size());
    const std::string slot = ".decoder_layer.";
    if (auto p = hf.find(slot); p != std::string::npos)
      hf = hf.substr(0, p) + "." + hf.substr(p + slot.size());
    out.emplace(hf, t.sizes().vec());
  }
  return out;
}

// HF checkpoints saved from the base model (facebook/opt-*: "decoder.layers...")
// lack the base-model prefix ("model."): add it where that makes a known name.
// Embedding / untied head with fewer rows than ours: pad with our current rows.
void adaptLmStateDict(const model::FlamingoImpl& model, StateDict* sd) {
  const auto ours = lmNames(model);
  std::set<std::string> prefixes;
  for (const auto& [name, shape] : ours) {
    if (auto dot = name.find('.'); dot != std::string::npos) prefixes.insert(name.substr(0, dot + 1));
  }
  StateDict renamed;
  for (auto& [key, t] : *sd) {
    std::string k = key;
    if (!ours.count(k)) {
      for (const auto& p : prefixes) {
        if (ours.count(p + k) && !sd->count(p + k)) {
          k = p + k;
          break;
        }
      }
    }
    renamed.emplace(k, t);
  }
  *sd = std::move(renamed);
  const torch::Tensor emb = model.inputEmbedding()->weight;
  const torch::Tensor head = model.outputHeadWeight();
  for (const auto& [name, t] : model.namedParameters()) {
    const bool isEmb = t.is_same(emb) || (head.defined() && t.is_same(head));
    if (!isEmb || !startsWith(name, "lang_encoder.")) continue;
    auto it = sd->find(name.substr(13));
    if (it == sd->end()) continue;
    const torch::Tensor& src = it->second;
    if (src.dim() == 2 && t.dim() == 2 && src.size(1) == t.size(1) && src.size(0) < t.size(0)) {
      torch::NoGradGuard ng;
      torch::Tensor padded = t.detach().clone();
      padded.narrow(0, 0, src.size(0)).copy_(src.to(padded.scalar_type()));
      it->second = padded;
    }
  }
}

}  // namespace

StatusOr<c10::ScalarType> torchDtype(tf::DType dtype) {
  switch (dtype) {
    case tf::DType::kFloat64:
      return c10::ScalarType::Double;
    case tf::DType::kFloat32:
      return c10::ScalarType::Float;
    case tf::DType::kFloat16:
      return c10::ScalarType::Half;
    case tf::DType::kBFloat16:
      return c10::ScalarType::BFloat16;
    case tf::DType::kInt64:
      return c10::ScalarType::Long;
    case tf::DType::kInt32:
      return c10::ScalarType::Int;
    case tf::DType::kInt16:
      return c10::ScalarType::Short;
    case tf::DType::kInt8:
      return c10::ScalarType::Char;
    case tf::DType::kUInt8:
      return c10::ScalarType::Byte;
    case tf::DType::kBool:
      return c10::ScalarType::Bool;
    case tf::DType::kComplex64:
      return c10::ScalarType::ComplexFloat;
    case tf::DType::kComplex128:
      return c10::ScalarType::ComplexDouble;
    case tf::DType::kUInt16:
      return c10::ScalarType::UInt16;
    case tf::DType::kUInt32:
      return c10::ScalarType::UInt32;
    case tf::DType::kUInt64:
      return c10::ScalarType::UInt64;
    case tf::DType::kFloat8E4M3:
      return c10::ScalarType::Float8_e4m3fn;
    case tf::DType::kFloat8E5M2:
      return c10::ScalarType::Float8_e5m2;
  }
  return Status::unsupported("dtype " + std::string(tf::torchName(dtype)) + " has no LibTorch equivalent");
}

StatusOr<torch::Tensor> toTorch(const tf::TensorView& view) {
  auto dtype = torchDtype(view.dtype);
  if (!dtype) return dtype.status();
  torch::Tensor out = torch::empty(view.shape, torch::TensorOptions().dtype(dtype.value()));
  const size_t bytes = static_cast<size_t>(out.numel()) * tf::itemSize(view.dtype);
  if (bytes > 0) {
    tf::copyContiguous(view, std::span<std::byte>(static_cast<std::byte*>(out.data_ptr()), bytes));
  }
  return out;
}

StatusOr<StateDict> loadStateDictFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound(path + ": no such file");
  StateDict out;
  if (looksLikeZip(path)) {
    auto file = tf::openTorchFile(path);
    if (!file) return file.status();
    const auto sections = tf::checkpointSections(file->root());
    if (!sections.model) return Status::invalidArgument(path + ": no state dict in it (not a checkpoint?)");
    auto sd = stateDictFromSection(file.value(), *sections.model);
    if (!sd) return sd.status();
    out = std::move(sd.value());
  } else {
    auto file = tf::SafetensorsFile::open(path);
    if (!file) return file.status();
    for (const auto& e : file->tensors()) {
      auto t = toTorch(file->view(e));
      if (!t) return withPrefix(t.status(), path + ": '" + e.name + "': ");
      out.emplace(e.name, std::move(t.value()));
    }
  }
  stripModulePrefix(&out);
  return out;
}

StatusOr<StateDict> loadWeightSet(const std::string& path) {
  std::error_code ec;
  auto set = std::filesystem::is_directory(path, ec) ? tf::WeightSet::openDirectory(path)
                                                     : tf::WeightSet::openFile(path);
  if (!set) return set.status();
  StateDict out;
  for (const auto& name : set->names()) {
    auto view = set->get(name);
    if (!view) return view.status();
    auto t = toTorch(view.value());
    if (!t) return withPrefix(t.status(), path + ": '" + name + "': ");
    out.emplace(name, std::move(t.value()));
  }
  return out;
}

StatusOr<ForeignCheckpoint> readForeignCheckpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound(path + ": no such file");
  ForeignCheckpoint out;
  if (!looksLikeZip(path)) {  // a safetensors state dict
    auto sd = loadStateDictFile(path);
    if (!sd) return sd.status();
    out.model = std::move(sd.value());
    return out;
  }
  auto file = tf::openTorchFile(path);
  if (!file) return file.status();
  const tf::PyValue& root = file->root();
  out.hasFlamingoStudioKey = root.find(protocol::kResumeRecordKey) != nullptr;
  const auto sections = tf::checkpointSections(root);
  if (!sections.model) return Status::invalidArgument(path + ": no model state dict in it");
  auto sd = stateDictFromSection(file.value(), *sections.model);
  if (!sd) return sd.status();
  out.model = std::move(sd.value());
  out.epoch = sections.epoch;
  if (sections.optimizer) {
    std::string note;
    out.optimizer = parseOptimizer(file.value(), *sections.optimizer, &note);
    if (!note.empty()) out.notes.push_back(note);
  }
  if (sections.scheduler) {
    std::string note;
    out.scheduler = parseScheduler(*sections.scheduler, &note);
    if (!note.empty()) out.notes.push_back(note);
  }
  return out;
}

StatusOr<PretrainedLoad> loadPretrained(model::FlamingoImpl& model, const protocol::ModelConfig& config) {
  PretrainedLoad out;
  std::error_code ec;
  if (!config.lm.path.empty()) {
    const std::string& p = config.lm.path;
    if (!std::filesystem::is_directory(p, ec) && !std::filesystem::is_regular_file(p, ec)) {
      return Status::notFound(notDownloadable("model.lm.path", p, "directory",
                                              "huggingface-cli download " + p + " --local-dir <folder>"));
    }
    auto sd = loadWeightSet(p);
    if (!sd) return withPrefix(sd.status(), "model.lm.path: ");
    adaptLmStateDict(model, &sd.value());
    const model::LoadReport r = model.loadLanguageModelStateDict(sd.value());
    if (!r.missing.empty() || !r.mismatched.empty()) {
      return Status::invalidArgument("model.lm.path '" + p + "': " + r.summary() +
                                     (r.mismatched.empty() ? "" : " (wrong base model, or model.lm shape?)"));
    }
    out.info.push_back("language model: " + std::to_string(r.loaded.size()) + " tensors loaded from " + p);
    if (!r.unexpected.empty()) out.warnings.push_back("model.lm.path '" + p + "': " + r.summary());
  }
  if (!config.vision.pretrained.empty()) {
    const std::string& p = config.vision.pretrained;
    if (!std::filesystem::is_regular_file(p, ec)) {
      // OpenFlamingo's tower is OpenAI's CLIP (open_clip's "openai" tag, a TorchScript file): its
      // state dict, saved as a plain one, is what loads here.
      const std::string tower =
          protocol::findKnownVision(config.vision.path) ? config.vision.path : "ViT-L-14";
      return Status::notFound(notDownloadable(
          "model.vision.pretrained", p, "file",
          "OpenAI's CLIP weights, as OpenFlamingo uses them: python3 -c \"import open_clip, torch; "
          "m = open_clip.create_model('" +
              tower +
              "', pretrained='openai'); torch.save(m.state_dict(), "
              "'clip-" +
              tower + "-openai.pt')\""));
    }
    auto sd = loadStateDictFile(p);
    if (!sd) return withPrefix(sd.status(), "model.vision.pretrained: ");
    const model::LoadReport r = model.loadVisionStateDict(sd.value());
    if (!r.missing.empty() || !r.mismatched.empty()) {
      return Status::invalidArgument("model.vision.pretrained '" + p + "': " + r.summary() +
                                     (r.mismatched.empty() ? "" : " (wrong tower, or model.vision shape?)"));
    }
    out.info.push_back("vision tower: " + std::to_string(r.loaded.size()) + " tensors loaded from " + p);
    if (!r.unexpected.empty()) out.warnings.push_back("model.vision.pretrained '" + p + "': " + r.summary());
  }
  return out;
}

}  // namespace fs::checkpoint

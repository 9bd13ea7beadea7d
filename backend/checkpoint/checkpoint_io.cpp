#include "backend/checkpoint/checkpoint_io.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "backend/checkpoint/checkpoint_sharded.h"
#include "backend/checkpoint/record_ivalue.h"
#include "backend/inspect/checkpoint_index.h"
#include "backend/inspect/training_state.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/runtime/torch_pickle.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::checkpoint {
namespace {

using c10::IValue;
using GDict = c10::impl::GenericDict;
using GList = c10::impl::GenericList;

GDict strDict() {
  return GDict(c10::StringType::get(), c10::AnyType::get());
}

IValue doubles(const std::vector<double>& v) {
  GList l(c10::FloatType::get());
  for (double d : v) l.push_back(d);
  return l;
}

IValue ints(const std::vector<int64_t>& v) {
  GList l(c10::IntType::get());
  for (int64_t i : v) l.push_back(i);
  return l;
}

IValue optimizerIValue(const step::OptimizerStateDict& o) {
  GDict state(c10::IntType::get(), c10::AnyType::get());
  for (const auto& p : o.state) {
    GDict s = strDict();
    // On the host, as the model state: the file loads where no GPU is (the inspector, torch.load).
    const auto host = [](const torch::Tensor& t) { return t.defined() ? t.detach().cpu() : t; };
    s.insert("step", host(p.step));
    s.insert("exp_avg", host(p.expAvg));
    s.insert("exp_avg_sq", host(p.expAvgSq));
    state.insert(p.index, s);
  }
  GList groups(c10::AnyType::get());
  for (const auto& g : o.paramGroups) {
    GDict d = strDict();
    d.insert("lr", g.lr);
    d.insert("betas", c10::ivalue::Tuple::create({g.beta1, g.beta2}));
    d.insert("eps", g.eps);
    d.insert("weight_decay", g.weightDecay);
    d.insert("amsgrad", g.amsgrad);
    d.insert("foreach", IValue());
    d.insert("maximize", g.maximize);
    d.insert("capturable", g.capturable);
    if (g.initialLr) d.insert("initial_lr", *g.initialLr);
    d.insert("params", ints(g.params));
    groups.push_back(d);
  }
  GDict out = strDict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

IValue schedulerIValue(const step::LrSchedulerStateDict& s) {
  GDict d = strDict();
  d.insert("base_lrs", doubles(s.baseLrs));
  d.insert("last_epoch", s.lastEpoch);
  d.insert("verbose", s.verbose);
  d.insert("_step_count", s.stepCount);
  d.insert("_get_lr_called_within_step", s.getLrCalledWithinStep);
  d.insert("_last_lr", doubles(s.lastLr));
  GList lambdas(c10::AnyType::get());
  for (size_t i = 0; i < s.baseLrs.size(); ++i) lambdas.push_back(IValue());
  d.insert("lr_lambdas", lambdas);
  return d;
}

// ---- reading back (files this engine wrote)

protocol::Status bad(const std::filesystem::path& path, const std::string& what) {
  return protocol::Status::corruption(path.string() + ": " + what);
}

const IValue* field(const GDict& d, const std::string& key) {
  auto it = d.find(key);
  return it == d.end() ? nullptr : &it->value();
}

std::vector<double> toDoubles(const IValue& v) {
  std::vector<double> out;
  for (const auto& x : v.toListRef()) out.push_back(x.toDouble());
  return out;
}

protocol::StatusOr<CheckpointContents> parse(const IValue& root, const std::filesystem::path& path) {
  if (!root.isGenericDict()) return bad(path, "not a dict at the top level");
  const GDict top = root.toGenericDict();
  CheckpointContents c;
  for (const char* key : {"epoch", "model_state_dict", "optimizer_state_dict", "lr_scheduler_state_dict"}) {
    if (!field(top, key)) return bad(path, std::string("missing key '") + key + "'");
  }
  const IValue* ours = field(top, std::string(protocol::kResumeRecordKey));
  if (!ours) {
    return bad(path,
               "no 'flamingo_studio' key: not written by Flamingo Studio (use the OpenFlamingo importer)");
  }
  c.epoch = field(top, "epoch")->toInt();
  for (const auto& kv : field(top, "model_state_dict")->toGenericDict()) {
    c.modelState.emplace_back(kv.key().toStringRef(), kv.value().toTensor());
  }
  const GDict opt = field(top, "optimizer_state_dict")->toGenericDict();
  for (const auto& kv : field(opt, "state")->toGenericDict()) {
    const GDict s = kv.value().toGenericDict();
    step::AdamWParamStateDict p;
    p.index = kv.key().toInt();
    p.step = field(s, "step")->toTensor();
    p.expAvg = field(s, "exp_avg")->toTensor();
    p.expAvgSq = field(s, "exp_avg_sq")->toTensor();
    c.optimizer.state.push_back(p);
  }
  std::sort(c.optimizer.state.begin(), c.optimizer.state.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  for (const auto& g : field(opt, "param_groups")->toListRef()) {
    const GDict d = g.toGenericDict();
    step::AdamWGroupStateDict group;
    group.lr = field(d, "lr")->toDouble();
    const auto betas = field(d, "betas")->toTupleRef().elements();
    group.beta1 = betas.at(0).toDouble();
    group.beta2 = betas.at(1).toDouble();
    group.eps = field(d, "eps")->toDouble();
    group.weightDecay = field(d, "weight_decay")->toDouble();
    group.amsgrad = field(d, "amsgrad")->toBool();
    group.maximize = field(d, "maximize")->toBool();
    group.capturable = field(d, "capturable")->toBool();
    if (const IValue* lr0 = field(d, "initial_lr")) group.initialLr = lr0->toDouble();
    for (const auto& i : field(d, "params")->toListRef()) group.params.push_back(i.toInt());
    c.optimizer.paramGroups.push_back(group);
  }
  const GDict sch = field(top, "lr_scheduler_state_dict")->toGenericDict();
  c.scheduler.baseLrs = toDoubles(*field(sch, "base_lrs"));
  c.scheduler.lastEpoch = field(sch, "last_epoch")->toInt();
  c.scheduler.stepCount = field(sch, "_step_count")->toInt();
  c.scheduler.lastLr = toDoubles(*field(sch, "_last_lr"));
  auto record = resumeFromIValue(*ours);
  if (!record) return bad(path, record.status().message());
  auto resume = fromResumeRecord(record.value());
  if (!resume) return bad(path, resume.status().message());
  c.resume = std::move(resume.value());
  return c;
}

}  // namespace

protocol::ResumeRecord toResumeRecord(const ResumeState& r) {
  protocol::ResumeRecord out;
  out.kind = r.kind;
  out.step = r.step;
  out.iteration = r.iteration;
  out.epoch = r.epoch;
  out.dataPosition.value = r.data;
  out.rngTorchCpu.data = r.rng.torchCpu;
  for (const auto& c : r.rng.torchCuda) out.rngTorchCuda.push_back({c});
  out.rngOwn.assign(r.rng.own.begin(), r.rng.own.end());
  out.manifest.value = r.manifest;
  out.gradScaler = r.gradScaler;
  return out;
}

protocol::StatusOr<ResumeState> fromResumeRecord(const protocol::ResumeRecord& record) {
  if (protocol::Status s = protocol::checkResumeRecord(record); !s) return s;
  ResumeState r;
  r.kind = record.kind;
  r.step = record.step;
  r.iteration = record.iteration;
  r.epoch = record.epoch;
  r.data = record.dataPosition.value;
  r.rng.torchCpu = record.rngTorchCpu.data;
  for (const auto& c : record.rngTorchCuda) r.rng.torchCuda.push_back(c.data);
  std::copy(record.rngOwn.begin(), record.rngOwn.end(), r.rng.own.begin());  // checked: 4 words
  r.manifest = record.manifest.value;
  r.gradScaler = record.gradScaler;
  return r;
}

model::NamedTensors checkpointModelState(const model::NamedTensors& parameters,
                                         const model::NamedTensors& buffers) {
  model::NamedTensors out;
  for (const auto& [name, t] : parameters) {
    if (t.requires_grad() || name.find("embed") != std::string::npos ||
        name.find("fsdp") != std::string::npos) {
      out.emplace_back(name, t.detach());
    }
  }
  for (const auto& [name, t] : buffers) {
    if (name.rfind("vision_encoder", 0) != 0) out.emplace_back(name, t.detach());
  }
  return out;
}

protocol::Status writeCheckpoint(const std::filesystem::path& path, const CheckpointContents& c,
                                 protocol::WriteEnv* env) {
  GDict model(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [name, t] : c.modelState) model.insert(name, t.detach().cpu());
  GDict top = strDict();
  top.insert("epoch", c.epoch);
  top.insert("model_state_dict", model);
  top.insert("optimizer_state_dict", optimizerIValue(c.optimizer));
  top.insert("lr_scheduler_state_dict", schedulerIValue(c.scheduler));
  top.insert(std::string(protocol::kResumeRecordKey), resumeToIValue(toResumeRecord(c.resume)));
  std::vector<char> bytes;
  try {
    bytes = fs::runtime::pickleForTorchLoad(top);
  } catch (const std::exception& e) {
    return protocol::Status::ioError(path.string() + ": cannot serialise checkpoint: " + e.what());
  }
  protocol::AtomicWriteOptions options;
  options.env = env;
  return protocol::atomicWriteFile(path, std::string_view(bytes.data(), bytes.size()), options);
}

protocol::StatusOr<CheckpointContents> readCheckpoint(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return readShardedCheckpoint(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return protocol::Status::notFound(path.string() + ": cannot open checkpoint");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse(torch::pickle_load(bytes), path);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    return bad(path, "unreadable or torn checkpoint: " + what);
  }
}

std::vector<std::filesystem::path> checkpointCandidates(const std::filesystem::path& dir,
                                                        std::vector<std::string>* skipped) {
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!protocol::parseCheckpointFileName(entry.path().filename().string())) continue;
    if (entry.is_directory()) {  // sharded: complete once index.json names rank files that all exist
      auto iteration = shardedCheckpointIteration(entry.path());
      if (iteration) {
        found.emplace_back(iteration.value(), entry.path());
      } else if (skipped) {
        skipped->push_back(iteration.status().message());
      }
      continue;
    }
    if (!entry.is_regular_file()) continue;
    // A torn file has no zip central directory, so opening it already fails. The resume record is read
    // torch-free, by its one field list (NOTE [Checkpoint records]), as the inspector reads it.
    auto file = inspect::CheckpointIndex::open(entry.path().string());
    if (!file) {
      if (skipped)
        skipped->push_back(entry.path().string() +
                           ": unreadable or torn checkpoint: " + file.status().message());
      continue;
    }
    auto record = inspect::readResumeRecord(file.value());
    if (!record || !record.value()) {
      if (skipped) {
        skipped->push_back(record
                               ? entry.path().string() + ": no " + std::string(protocol::kResumeRecordKey) +
                                     " record: not a resumable checkpoint"
                               : record.status().message());
      }
      continue;
    }
    found.emplace_back(record.value()->iteration, entry.path());
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::filesystem::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::optional<std::filesystem::path> newestCompleteCheckpoint(const std::filesystem::path& dir,
                                                              std::vector<std::string>* skipped) {
  auto candidates = checkpointCandidates(dir, skipped);
  if (candidates.empty()) return std::nullopt;
  return candidates.front();
}

}  // namespace fs::checkpoint

#include "backend/inspect/training_state.h"

#include <algorithm>
#include <map>

#include "backend/inspect/record_pyvalue.h"
#include "backend/inspect/training_state_parts.h"
#include "backend/tensorfile/content_hash.h"
#include "backend/tensorfile/tensor_stats.h"

namespace fs::inspect {
namespace {

namespace tf = tensorfile;
using tf::PyKind;
using tf::PyValue;

// NOTE [Optimizer ids]: torch's optimizer state_dict keys parameters by their
// position over all param groups' params, in group order; the names are not
// in it. The sharded index records them (param_names). Otherwise they follow
// from how the optimizer was built (NOTE [Weight-decay groups] in
// backend/step/optimizer.h, OpenFlamingo's train.py): the trainable
// parameters in model order, "gated_cross_attn" ones to group 0, the rest to
// group 1 (one group: all of them). Ours lists the trainable parameters in
// its manifest; OpenFlamingo's model_state_dict holds them (it drops the
// frozen ones on save, but keeps every "embed" key, frozen position
// embeddings too), less its duplicate old_decoder_blocks /
// gated_cross_attn_layers references; when those keys are too many, the
// ones OpenFlamingo's freezing trains are taken. Names are given only when
// the counts add up to the groups' params and every moment has its
// parameter's shape; else they are left unknown rather than guessed.
bool isAlias(const std::string& key) {
  return key.find("lang_encoder.old_decoder_blocks.") != std::string::npos ||
         key.find("lang_encoder.gated_cross_attn_layers.") != std::string::npos;
}

}  // namespace

namespace detail {

Status bad(const CheckpointIndex& c, const std::string& entry, const std::string& what) {
  return Status::corruption(c.path() + ": " + entry + ": " + what);
}

namespace {

std::vector<double> doubles(const PyValue* v) {
  std::vector<double> out;
  if (!v || !v->isSequence()) return out;
  for (const auto& x : v->items) {
    if (auto d = x->asDouble()) out.push_back(*d);
  }
  return out;
}

std::optional<std::int64_t> intAt(const PyValue* dict, std::string_view key) {
  const PyValue* v = dict ? dict->find(key) : nullptr;
  return v ? v->asInt() : std::nullopt;
}

// A scalar tensor's value or a Python number (step before torch 1.12).
StatusOr<std::optional<double>> scalar(const CheckpointIndex& c, const PyValue* v, const std::string& entry) {
  if (!v) return std::optional<double>();
  if (auto d = v->asDouble()) return std::optional<double>(*d);
  if (!v->isTensor()) return bad(c, entry, "is a " + v->typeName() + ", not a number");
  auto i = c.find(entry, Section::kOptimizer);
  if (!i) return bad(c, entry, "is not in the checkpoint's tensor index");
  auto data = c.data(*i);
  if (!data) return bad(c, entry, data.status().message());
  auto stats = tf::computeStats(data->view, {});
  if (!stats) return bad(c, entry, stats.status().message());
  return std::optional<double>(stats->moments.mean);
}

}  // namespace

StatusOr<std::optional<double>> norm(const CheckpointIndex& c, const std::string& entry,
                                     std::vector<std::int64_t>* shape) {
  auto i = c.find(entry, Section::kOptimizer);
  if (!i) return std::optional<double>();
  auto data = c.data(*i);
  if (!data) return bad(c, entry, data.status().message());
  auto stats = tf::computeStats(data->view, {});
  if (!stats) return bad(c, entry, stats.status().message());
  if (shape) *shape = c.tensors()[*i].shape;
  return std::optional<double>(stats->moments.l2Norm());
}

namespace {

RngGenerator generator(std::string name, const std::vector<std::uint8_t>& bytes) {
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  return {std::move(name), bytes.size(), tf::contentHashText(tf::xxh64(view))};
}

// Our process generator's words, little-endian.
RngGenerator ownGenerator(const std::vector<std::uint64_t>& words) {
  std::vector<std::uint8_t> bytes(words.size() * 8);
  for (std::size_t w = 0; w < words.size(); ++w) {
    for (int b = 0; b < 8; ++b) bytes[w * 8 + b] = static_cast<std::uint8_t>((words[w] >> (8 * b)) & 0xff);
  }
  return generator("own (process Rng)", bytes);
}

}  // namespace

ResumeInfo describeResume(const protocol::ResumeRecord& record) {
  ResumeInfo out;
  out.kind = record.kind;
  out.step = record.step;
  out.iteration = record.iteration;
  out.epoch = record.epoch;
  out.rng.push_back(generator("torch CPU", record.rngTorchCpu.data));
  for (std::size_t d = 0; d < record.rngTorchCuda.size(); ++d)
    out.rng.push_back(generator("torch CUDA " + std::to_string(d), record.rngTorchCuda[d].data));
  out.rng.push_back(ownGenerator(record.rngOwn));
  out.data = record.dataPosition.value;
  return out;
}

}  // namespace detail

namespace {

using namespace detail;

struct Candidate {
  std::string name;
  std::vector<std::int64_t> shape;
};

// Names per optimizer id from the trainable parameters in model order (NOTE
// [Optimizer ids]); false, naming nothing, unless the groups' counts add up
// and every stepped parameter's moments have its candidate's shape.
bool nameByRule(OptimizerState& opt, const std::vector<std::vector<std::int64_t>>& groupIds,
                const std::vector<Candidate>& trainable, const std::string& source) {
  std::vector<std::vector<const Candidate*>> byGroup(groupIds.size());
  if (groupIds.size() == 1) {
    for (const auto& c : trainable) byGroup[0].push_back(&c);
  } else if (groupIds.size() == 2) {
    for (const auto& c : trainable)
      byGroup[c.name.find("gated_cross_attn") != std::string::npos ? 0 : 1].push_back(&c);
  } else {
    return false;
  }
  for (std::size_t g = 0; g < groupIds.size(); ++g) {
    if (byGroup[g].size() != groupIds[g].size()) return false;
  }
  std::map<std::int64_t, const Candidate*> byId;
  for (std::size_t g = 0; g < groupIds.size(); ++g) {
    for (std::size_t k = 0; k < groupIds[g].size(); ++k) byId[groupIds[g][k]] = byGroup[g][k];
  }
  for (const auto& p : opt.params) {
    auto it = byId.find(p.id);
    if (it == byId.end() || (!p.shape.empty() && p.shape != it->second->shape)) return false;
  }
  for (auto& p : opt.params) p.name = byId.at(p.id)->name;
  opt.nameSource = source;
  return true;
}

// What OpenFlamingo's freezing leaves trainable: the resampler, the gated
// blocks and the LM's input embedding (its save keeps every "embed" key,
// frozen position embeddings included, so the keys alone may be too many).
bool openFlamingoTrainable(const std::string& name) {
  for (const char* part :
       {"perceiver.", "gated_cross_attn_layer.", "embed_tokens.", "transformer.wte.", "embed_in."}) {
    if (name.find(part) != std::string::npos) return true;
  }
  return false;
}

void nameOptimizerState(OptimizerState& opt, const std::vector<std::vector<std::int64_t>>& groupIds,
                        const CheckpointIndex& c, const PyValue& root) {
  std::vector<Candidate> candidates;
  if (c.format() == CheckpointFormat::kFlamingoStudio) {
    if (!c.manifest()) return;
    for (const auto& p : c.manifest()->parameters) {
      if (p.trainable) candidates.push_back({p.name, p.shape});
    }
    nameByRule(opt, groupIds, candidates, "the manifest's trainable parameters");
    return;
  }
  const PyValue* model = root.find("model_state_dict");
  if (!model || !model->isDict()) return;
  for (const auto& [k, v] : model->entries) {
    if (v->isTensor() && k->isStr() && !isAlias(k->text)) candidates.push_back({k->text, v->tensor->shape});
  }
  if (nameByRule(opt, groupIds, candidates, "model_state_dict's keys")) return;
  std::vector<Candidate> trainable;
  for (const auto& cand : candidates) {
    if (openFlamingoTrainable(cand.name)) trainable.push_back(cand);
  }
  nameByRule(opt, groupIds, trainable, "model_state_dict's keys OpenFlamingo trains");
}

StatusOr<OptimizerState> readOptimizer(const CheckpointIndex& c, const PyValue& root, const PyValue& opt) {
  OptimizerState out;
  const PyValue* groups = opt.find("param_groups");
  if (!groups || !groups->isSequence()) return bad(c, "optimizer_state_dict.param_groups", "is not a list");
  std::vector<std::vector<std::int64_t>> groupIds;
  std::map<std::int64_t, std::size_t> groupOf;
  for (std::size_t g = 0; g < groups->items.size(); ++g) {
    const PyValue& d = *groups->items[g];
    const std::string entry = "optimizer_state_dict.param_groups." + std::to_string(g);
    if (!d.isDict()) return bad(c, entry, "is not a dict");
    OptimizerGroup group;
    group.index = g;
    auto num = [&](std::string_view key) { return d.find(key) ? d.find(key)->asDouble() : std::nullopt; };
    group.lr = num("lr").value_or(0);
    group.weightDecay = num("weight_decay").value_or(0);
    group.eps = num("eps").value_or(0);
    group.initialLr = num("initial_lr");
    const auto betas = doubles(d.find("betas"));
    if (betas.size() == 2) {
      group.beta1 = betas[0];
      group.beta2 = betas[1];
    }
    std::vector<std::int64_t> ids;
    if (const PyValue* params = d.find("params"); params && params->isSequence()) {
      for (const auto& p : params->items) {
        if (auto id = p->asInt()) {
          ids.push_back(*id);
          groupOf[*id] = g;
        }
      }
    }
    group.params = ids.size();
    groupIds.push_back(std::move(ids));
    out.groups.push_back(group);
  }
  const PyValue* state = opt.find("state");
  if (state && state->isDict()) {
    for (const auto& [k, v] : state->entries) {
      OptimizerParamState p;
      const auto id = k->asInt();
      if (!id) return bad(c, "optimizer_state_dict.state", "has a key that is not a parameter id");
      p.id = *id;
      if (auto g = groupOf.find(p.id); g != groupOf.end()) p.group = g->second;
      const std::string prefix = "state." + std::to_string(p.id) + ".";
      auto step = scalar(c, v->find("step"), prefix + "step");
      if (!step) return step.status();
      p.step = step.value();
      auto m = norm(c, prefix + "exp_avg", &p.shape);
      if (!m) return m.status();
      p.expAvgNorm = m.value();
      auto s = norm(c, prefix + "exp_avg_sq", nullptr);
      if (!s) return s.status();
      p.expAvgSqNorm = s.value();
      out.params.push_back(std::move(p));
    }
  }
  std::sort(out.params.begin(), out.params.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  nameOptimizerState(out, groupIds, c, root);
  return out;
}

SchedulerState readScheduler(const PyValue& s) {
  SchedulerState out;
  out.lastEpoch = intAt(&s, "last_epoch");
  out.stepCount = intAt(&s, "_step_count");
  out.baseLrs = doubles(s.find("base_lrs"));
  out.lastLr = doubles(s.find("_last_lr"));
  return out;
}

Status readTorchSave(const CheckpointIndex& c, TrainingState& out) {
  const PyValue* root = c.root();
  if (!root || !root->isDict()) return Status::ok();
  out.epoch = intAt(root, "epoch");
  if (const PyValue* opt = root->find("optimizer_state_dict"); opt && opt->isDict()) {
    auto o = readOptimizer(c, *root, *opt);
    if (!o) return o.status();
    out.optimizer = std::move(o.value());
  }
  if (const PyValue* s = root->find("lr_scheduler_state_dict"); s && s->isDict())
    out.scheduler = readScheduler(*s);
  auto record = readResumeRecord(c);
  if (!record) return record.status();
  if (record.value()) out.resume = describeResume(*record.value());
  return Status::ok();
}

}  // namespace

StatusOr<std::optional<protocol::ResumeRecord>> readResumeRecord(const CheckpointIndex& c) {
  using Found = std::optional<protocol::ResumeRecord>;
  if (c.format() == CheckpointFormat::kFlamingoStudioSharded) {
    auto index = readShardedIndexRecord(c);
    if (!index) return index.status();
    if (Status s = protocol::checkResumeRecord(index->resume); !s)
      return bad(c, "index.json resume", s.message());
    return Found(std::move(index->resume));
  }
  const PyValue* root = c.root();
  const PyValue* ours = root && root->isDict() ? root->find(protocol::kResumeRecordKey) : nullptr;
  if (!ours) return Found();
  const TensorBytes bytes = [&c](const std::string& entry) -> StatusOr<std::vector<std::uint8_t>> {
    auto i = c.find(entry, Section::kOther);
    if (!i) return Status::corruption("is not in the checkpoint's tensor index");
    auto data = c.data(*i);
    if (!data) return data.status();
    const auto contiguous = tf::toContiguous(data->view);
    const auto* p = reinterpret_cast<const std::uint8_t*>(contiguous.data());
    return std::vector<std::uint8_t>(p, p + contiguous.size());
  };
  auto record = resumeFromPyValue(*ours, bytes);
  if (!record) return Status::corruption(c.path() + ": " + record.status().message());
  return Found(std::move(record.value()));
}

StatusOr<TrainingState> readTrainingState(const CheckpointIndex& checkpoint) {
  TrainingState out;
  out.path = checkpoint.path();
  out.format = checkpoint.format();
  const Status s = checkpoint.format() == CheckpointFormat::kFlamingoStudioSharded
                       ? readSharded(checkpoint, out)
                       : readTorchSave(checkpoint, out);
  if (!s) return s;
  if (!out.optimizer) out.absent.push_back("optimizer state: not in this checkpoint");
  if (!out.scheduler) out.absent.push_back("LR scheduler state: not in this checkpoint");
  if (!out.resume) {
    out.absent.push_back("global step, RNG state and data position: not in this checkpoint");
  } else if (!out.resume->data) {
    out.absent.push_back("data position: not in this checkpoint");
  }
  return out;
}

}  // namespace fs::inspect

#include "backend/trainer/replay.h"

#include <torch/serialize.h>
#include <torch/torch.h>

#include "backend/checkpoint/checkpoint_io.h"
#include "backend/checkpoint/weights.h"
#include "backend/data/data_source.h"
#include "backend/model/flamingo.h"
#include "backend/protocol/config/derived.h"
#include "backend/protocol/wire/run_dir.h"
#include "backend/runtime/torch_pickle.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::trainer {
namespace {

using protocol::Status;
namespace tf = tensorfile;

Status bad(const std::string& where, const std::string& what) {
  return Status::invalidArgument(where + ": " + what);
}

// One (images, input_ids, attention_mask) entry in the dtypes the engine
// trains on; shapes are checked by data::checkBatch once the dataset is known.
protocol::StatusOr<data::Batch> readBatchTuple(const tf::TorchFile& file, const tf::PyValue& v,
                                               const std::string& where, data::DatasetKind kind) {
  if (!v.isSequence() || v.items.size() != 3) {
    return bad(where, "expected a tuple (images, input_ids, attention_mask), got " + v.typeName());
  }
  const char* names[3] = {"images", "input_ids", "attention_mask"};
  torch::Tensor t[3];
  for (int i = 0; i < 3; ++i) {
    const std::string at = where + "[" + std::to_string(i) + "] (" + names[i] + ")";
    if (!v.items[i] || !v.items[i]->isTensor()) return bad(at, "expected a tensor");
    auto tensor = checkpoint::tensorFromFile(file, *v.items[i]->tensor, at);
    if (!tensor) return tensor.status();
    t[i] = tensor.value();
  }
  for (int i = 1; i < 3; ++i) {
    if (torch::isFloatingType(t[i].scalar_type()) || torch::isComplexType(t[i].scalar_type())) {
      return bad(where + "[" + std::to_string(i) + "] (" + names[i] + ")",
                 std::string("expected an integer or bool tensor, got ") + c10::toString(t[i].scalar_type()));
    }
  }
  data::Batch b;
  b.kind = kind;
  b.images = t[0].to(torch::kFloat32);
  b.inputIds = t[1].to(torch::kInt64);
  b.attentionMask = t[2].to(torch::kInt64);
  b.samples = b.inputIds.dim() > 0 ? b.inputIds.size(0) : 0;
  b.tokens = b.attentionMask.sum().item<int64_t>();
  return b;
}

// Hands the reference's batches to the training loop in order. Epoch length
// is the config's, so accumulation windows and epoch ends fall where a real
// run's would.
class ReplaySource final : public data::DataSource {
 public:
  ReplaySource(std::vector<data::StepBatches> steps, std::vector<data::DatasetInfo> infos,
               int64_t stepsPerEpoch)
      : steps_(std::move(steps)), infos_(std::move(infos)), stepsPerEpoch_(stepsPerEpoch) {}

  protocol::StatusOr<std::optional<data::StepBatches>> next() override {
    if (inEpoch_ >= stepsPerEpoch_ || cursor_ >= steps_.size()) return std::optional<data::StepBatches>();
    data::StepBatches b = steps_[cursor_++];
    b.epoch = epoch_;
    b.step = inEpoch_++;
    return std::optional<data::StepBatches>(std::move(b));
  }
  void setEpoch(int64_t epoch) override {
    epoch_ = epoch;
    inEpoch_ = 0;
  }
  int64_t epoch() const override { return epoch_; }
  int64_t stepsPerEpoch() const override { return stepsPerEpoch_; }
  const std::vector<data::DatasetInfo>& datasets() const override { return infos_; }
  data::DataPosition position() const override {
    data::DataPosition p;
    p.source = "replay";
    p.epoch = epoch_;
    for (const auto& d : infos_) {
      p.datasets.push_back(d.name);
      p.batchesConsumed.push_back(inEpoch_);
    }
    return p;
  }
  protocol::Status restore(const data::DataPosition&) override {
    return Status::unsupported("a replay does not resume from a checkpoint");
  }

 private:
  std::vector<data::StepBatches> steps_;
  std::vector<data::DatasetInfo> infos_;
  int64_t stepsPerEpoch_;
  size_t cursor_ = 0;
  int64_t epoch_ = 0;
  int64_t inEpoch_ = 0;
};

// The reference's batches in the config's dataset order, checked against the model's shapes.
protocol::StatusOr<std::vector<data::StepBatches>> stepBatches(const protocol::RunConfig& config,
                                                               const ReplayReference& reference) {
  std::vector<data::StepBatches> steps;
  for (size_t k = 0; k < reference.batches.size(); ++k) {
    const auto& entry = reference.batches[k];
    const std::string where = "batches[" + std::to_string(k) + "]";
    data::StepBatches step;
    step.step = static_cast<int64_t>(k);
    for (const auto& d : config.data.datasets) {
      auto it = entry.find(d.type);
      if (it == entry.end()) {
        return bad(where, "no '" + d.type + "' entry, but the config trains dataset '" + d.name + "' (type " +
                              d.type + ")");
      }
      data::Batch b = it->second;
      b.dataset = d.name;
      b.index = static_cast<int64_t>(k);
      const std::string at = where + "['" + d.type + "']";
      if (Status s = data::checkBatch(b); !s) return bad(at, s.message());
      const int64_t side = config.model.vision.image_size;
      if (b.images.size(4) != side || b.images.size(5) != side) {
        return bad(at, "images are " + std::to_string(b.images.size(4)) + "x" +
                           std::to_string(b.images.size(5)) + ", the config's model.vision.image_size is " +
                           std::to_string(side));
      }
      const int64_t vocab = config.model.tokens.vocab_size;
      if (b.inputIds.numel() > 0 &&
          (b.inputIds.min().item<int64_t>() < 0 || b.inputIds.max().item<int64_t>() >= vocab)) {
        return bad(at, "input_ids outside [0, " + std::to_string(vocab) + ") (model.tokens.vocab_size)");
      }
      step.batches.push_back(std::move(b));
    }
    for (const auto& [type, batch] : entry) {
      bool used = false;
      for (const auto& d : config.data.datasets) used = used || d.type == type;
      if (!used)
        return bad(where, "has a '" + type + "' entry, but the config trains no dataset of that type");
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

Status writeTrainable(const model::FlamingoImpl& model, const std::filesystem::path& out) {
  c10::Dict<std::string, torch::Tensor> params;
  for (const auto& [name, t] : model.namedParameters()) {
    if (t.requires_grad()) params.insert(name, t.detach().to(torch::kCPU).contiguous());
  }
  const std::vector<char> bytes = fs::runtime::pickleForTorchLoad(params);
  std::error_code ec;
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
  return protocol::atomicWriteFile(out, std::string_view(bytes.data(), bytes.size()));
}

}  // namespace

protocol::StatusOr<ReplayReference> readReplayReference(const std::string& path) {
  auto file = tf::openTorchFile(path);
  if (!file) return file.status();
  const tf::PyValue& root = file->root();
  if (!root.isDict()) return bad(path, "expected a dict with 'init' and 'batches', got " + root.typeName());
  const tf::PyValue* init = root.find("init");
  const tf::PyValue* batches = root.find("batches");
  if (!init || !init->isDict()) return bad(path, "no 'init' dict (parameter name -> tensor)");
  if (!batches || !batches->isSequence()) return bad(path, "no 'batches' list");
  ReplayReference ref;
  auto sd = checkpoint::stateDictFromSection(file.value(), *init);
  if (!sd) return sd.status();
  ref.init = std::move(sd.value());
  if (ref.init.empty()) return bad(path, "'init' holds no tensors");
  for (size_t k = 0; k < batches->items.size(); ++k) {
    const std::string where = path + ": batches[" + std::to_string(k) + "]";
    const tf::PyValue& entry = *batches->items[k];
    if (!entry.isDict())
      return bad(where, "expected a dict {\"laion\": (...), \"mmc4\": (...)}, got " + entry.typeName());
    std::map<std::string, data::Batch> step;
    for (const auto& [key, value] : entry.entries) {
      const std::string type = key && key->isStr() ? key->text : tf::keyToString(*key);
      const auto kind = data::datasetKindFromString(type);
      if (!kind) return bad(where, "unknown dataset type '" + type + "' (expected \"laion\" or \"mmc4\")");
      auto b = readBatchTuple(file.value(), *value, where + "['" + type + "']", *kind);
      if (!b) return b.status();
      step.emplace(type, std::move(b.value()));
    }
    if (step.empty()) return bad(where, "holds no batch");
    ref.batches.push_back(std::move(step));
  }
  if (ref.batches.empty()) return bad(path, "'batches' is empty");
  return ref;
}

Status runReplay(const protocol::RunConfig& config, const ReplayReference& reference,
                 const std::filesystem::path& runDir, const ReplayOptions& options) {
  auto steps = stepBatches(config, reference);
  if (!steps) return steps.status();
  std::vector<std::string> skipped;
  if (checkpoint::newestCompleteCheckpoint(runDir, &skipped)) {
    return Status::invalidArgument(runDir.string() +
                                   ": holds checkpoints; a replay starts from 'init' in a new run "
                                   "directory");
  }
  protocol::RunConfig c = config;
  c.checkpoint.every_steps = 0;
  c.checkpoint.resume_from.clear();
  const int64_t iterations = static_cast<int64_t>(steps->size());
  const int64_t stepsPerEpoch = std::max<int64_t>(1, protocol::deriveFigures(c).stepsPerEpoch);

  TrainerOptions t;
  t.disableDropout = true;
  t.maxIterations = iterations;
  t.onIteration = options.onIteration;
  t.makeSource = [&]() -> protocol::StatusOr<std::unique_ptr<data::DataSource>> {
    return std::unique_ptr<data::DataSource>(
        std::make_unique<ReplaySource>(std::move(steps.value()), data::datasetInfos(c, 1), stepsPerEpoch));
  };
  t.initModel = [&](model::FlamingoImpl& model) {
    const model::LoadReport report = model.loadStateDict(reference.init);
    if (!report.ok()) return Status::invalidArgument("init: " + report.summary());
    return Status::ok();
  };
  t.onFinished = [&](model::FlamingoImpl& model) { return writeTrainable(model, options.out); };
  auto outcome = runTraining(c, runDir, t);
  if (!outcome) return outcome.status();
  if (outcome.value() != TrainOutcome::kFinished) {
    return Status::invalidArgument("replay stopped before its last batch; " + options.out.string() +
                                   " was not written");
  }
  return Status::ok();
}

}  // namespace fs::trainer

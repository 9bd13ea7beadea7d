#include "backend/data/shard_source.h"

#include <algorithm>

#include "backend/data/laion_preparer.h"
#include "backend/data/mmc4_preparer.h"

namespace fs::data {

using protocol::Status;
using protocol::StatusOr;

namespace {

// Below this many samples seen, a drop rate says little (one bad sample in
// the first ten is 10%); the check waits for evidence.
constexpr int64_t kMinSamplesForDropRate = 100;

Status checkTokenIds(const protocol::TokensConfig& config, const Tokenizer& tok) {
  const auto mismatch = [&](const char* field, int64_t configured, int64_t actual, const std::string& what) {
    return Status::invalidArgument("model.tokens." + std::string(field) + " is " +
                                   std::to_string(configured) + " but the tokenizer gives " + what + " = " +
                                   std::to_string(actual) + "; set it to the tokenizer's value");
  };
  if (config.vocab_size != tok.size())
    return mismatch("vocab_size", config.vocab_size, tok.size(), "its length");
  if (config.eos_id != tok.eosId()) return mismatch("eos_id", config.eos_id, tok.eosId(), tok.eosToken());
  if (config.pad_id != tok.padId()) return mismatch("pad_id", config.pad_id, tok.padId(), "the pad token");
  if (config.image_id != tok.imageId())
    return mismatch("image_id", config.image_id, tok.imageId(), "<image>");
  if (config.endofchunk_id != tok.endofchunkId()) {
    return mismatch("endofchunk_id", config.endofchunk_id, tok.endofchunkId(), "<|endofchunk|>");
  }
  return Status::ok();
}

}  // namespace

StatusOr<std::unique_ptr<ShardSource>> ShardSource::create(
    const protocol::RunConfig& config, int64_t rank, int64_t world,
    std::shared_ptr<const Tokenizer> tokenizer, const std::vector<std::vector<std::string>>& shardFiles) {
  if (!tokenizer) {
    return Status::invalidArgument("model.lm.tokenizer_path: the shard pipeline needs a tokenizer");
  }
  if (Status s = checkTokenIds(config.model.tokens, *tokenizer); !s) return s;
  std::unique_ptr<ShardSource> src(new ShardSource());
  src->tokenizer_ = std::move(tokenizer);
  src->infos_ = datasetInfos(config, world);
  src->maxDropRatePct_ = config.data.max_drop_rate_pct;
  src->rank_ = rank;
  src->world_ = world;
  src->stepsPerEpoch_ = -1;
  const int64_t imageSize = config.model.vision.image_size;
  // `compat: openflamingo`: MMC4 documents by OpenFlamingo 2.0.1's rules
  // (NOTE [MMC4 assignment] in documents/mmc4_document.h).
  const Mmc4Assignment mmc4Assignment =
      config.compat == "openflamingo" ? Mmc4Assignment::kBestSentence : Mmc4Assignment::kOneToOne;
  const auto capacity = static_cast<size_t>(std::max<int64_t>(1, config.data.shuffle_buffer));
  for (size_t i = 0; i < config.data.datasets.size(); ++i) {
    const auto& dc = config.data.datasets[i];
    const DatasetInfo& info = src->infos_[i];
    Dataset d;
    ShardPlanOptions po{static_cast<uint64_t>(config.seed), rank, world, std::max<int64_t>(1, dc.workers),
                        config.data.resampled};
    const bool files = i < shardFiles.size() && !shardFiles[i].empty();
    auto plan =
        files ? ShardPlan::fromFiles(dc.name, shardFiles[i], po) : ShardPlan::create(dc.name, dc.shards, po);
    if (!plan) return plan.status();
    d.plan = std::make_unique<ShardPlan>(std::move(plan.value()));
    if (info.kind == DatasetKind::kLaion) {
      d.preparer = std::make_unique<LaionPreparer>(src->tokenizer_, imageSize, info.maxTokens);
    } else {
      Mmc4PrepareOptions mo;
      mo.maxTokens = info.maxTokens;
      mo.imageSize = imageSize;
      mo.simThreshold = dc.textsim_threshold;
      mo.maxNumImages = info.imagesPerSample;
      mo.minNumImages = dc.min_num_images;
      mo.assignment = mmc4Assignment;
      d.preparer = std::make_unique<Mmc4Preparer>(src->tokenizer_, mo);
    }
    d.ledger = std::make_unique<DropLedger>(dc.name);
    for (int64_t w = 0; w < po.workers; ++w) {
      WorkerSpec ws;
      ws.dataset = dc.name;
      ws.kind = info.kind;
      ws.datasetIndex = static_cast<int64_t>(i);
      ws.worker = w;
      ws.batchSize = info.batchSize;
      ws.maxTokens = info.maxTokens;
      ws.imagesPerSample = info.imagesPerSample;
      ws.imageSize = imageSize;
      ws.padId = src->tokenizer_->padId();
      ws.quota = info.batchesPerEpoch / po.workers;
      ws.shuffleCapacity = capacity;
      ws.shuffleInitial = std::max<size_t>(1, capacity / 5);  // the reference's 5000 / 1000
      ws.prefetch = static_cast<size_t>(std::max<int64_t>(1, config.data.prefetch_batches));
      ws.seed = static_cast<uint64_t>(config.seed);
      ws.rank = rank;
      ws.stallTimeout = std::chrono::seconds(config.data.stall_timeout_s);
      d.workers.push_back(std::make_unique<ShardWorker>(ws, *d.plan, *d.preparer, *d.ledger));
    }
    src->stepsPerEpoch_ =
        src->stepsPerEpoch_ < 0 ? info.batchesPerEpoch : std::min(src->stepsPerEpoch_, info.batchesPerEpoch);
    src->datasets_.push_back(std::move(d));
  }
  src->stepsPerEpoch_ = std::max<int64_t>(0, src->stepsPerEpoch_);
  src->consumed_.assign(src->datasets_.size(), 0);
  return src;
}

ShardSource::~ShardSource() {
  stopWorkers();
}

void ShardSource::stopWorkers() {
  for (auto& d : datasets_) {
    for (auto& w : d.workers) w->stop();
  }
  started_ = false;
}

void ShardSource::startWorkers() {
  for (size_t i = 0; i < datasets_.size(); ++i) {
    auto& workers = datasets_[i].workers;
    const auto n = static_cast<int64_t>(workers.size());
    for (int64_t w = 0; w < n; ++w) {
      // Batches i < consumed with i mod n == w were this worker's.
      const int64_t skip = consumed_[i] > w ? (consumed_[i] - w + n - 1) / n : 0;
      workers[static_cast<size_t>(w)]->start(epoch_, skip);
    }
  }
  started_ = true;
}

StatusOr<std::optional<StepBatches>> ShardSource::next() {
  if (step_ >= stepsPerEpoch_) return std::optional<StepBatches>();
  if (!started_) startWorkers();
  StepBatches out;
  out.epoch = epoch_;
  out.step = step_;
  for (size_t i = 0; i < datasets_.size(); ++i) {
    auto& d = datasets_[i];
    const int64_t index = consumed_[i];
    auto batch = d.workers[static_cast<size_t>(index) % d.workers.size()]->take();
    if (!batch) return batch.status();
    if (Status s = d.ledger->checkRate(maxDropRatePct_, kMinSamplesForDropRate); !s) return s;
    batch->index = index;
    ++consumed_[i];
    out.batches.push_back(std::move(batch.value()));
  }
  // Every batch of this pipeline carries one (shard_worker.cpp); all or none.
  cursors_.clear();
  for (const Batch& b : out.batches) {
    if (b.cursor) cursors_.push_back(*b.cursor);
  }
  if (cursors_.size() != out.batches.size()) cursors_.clear();
  ++step_;
  return std::optional<StepBatches>(std::move(out));
}

StatusOr<bool> ShardSource::waitReady(std::chrono::milliseconds slice) {
  if (step_ >= stepsPerEpoch_) return true;
  if (!started_) startWorkers();
  bool ready = true;
  for (size_t i = 0; i < datasets_.size(); ++i) {
    auto& workers = datasets_[i].workers;
    auto r = workers[static_cast<size_t>(consumed_[i]) % workers.size()]->waitReady(slice);
    if (!r) return r.status();
    ready = ready && r.value();
  }
  return ready;
}

void ShardSource::setEpoch(int64_t epoch) {
  stopWorkers();
  epoch_ = epoch;
  step_ = 0;
  std::fill(consumed_.begin(), consumed_.end(), 0);
  cursors_.clear();
}

DataPosition ShardSource::position() const {
  DataPosition p;
  p.source = "shards";
  p.epoch = epoch_;
  p.rank = rank_;
  p.world = world_;
  for (const auto& info : infos_) {
    p.datasets.push_back(info.name);
    p.batchSizes.push_back(info.batchSize);
  }
  p.batchesConsumed = consumed_;
  p.cursors = cursors_;
  return p;
}

Status ShardSource::restore(const DataPosition& p) {
  if (Status s = checkResumable(position(), p, stepsPerEpoch_); !s) return s;
  // Datasets advance together, one batch each per step.
  const int64_t step = p.batchesConsumed.empty() ? 0 : p.batchesConsumed.front();
  for (int64_t c : p.batchesConsumed) {
    if (c != step) return Status::invalidArgument("data position: datasets at different steps of the epoch");
  }
  if (!p.cursors.empty() && p.cursors.size() != p.datasets.size()) {
    return Status::invalidArgument("data position: " + std::to_string(p.cursors.size()) + " cursors for " +
                                   std::to_string(p.datasets.size()) + " datasets");
  }
  setEpoch(p.epoch);
  consumed_ = p.batchesConsumed;
  cursors_ = p.cursors;
  step_ = step;
  return Status::ok();
}

std::map<std::string, DatasetDrops> ShardSource::dropCounts() const {
  std::map<std::string, DatasetDrops> out;
  for (const auto& d : datasets_) out[d.ledger->dataset()] = d.ledger->counts();
  return out;
}

int64_t ShardSource::notAccepted() const {
  int64_t n = 0;
  for (const auto& d : datasets_) n += d.ledger->notAccepted();
  return n;
}

std::vector<std::string> ShardSource::takeProblems() {
  std::vector<std::string> out;
  for (auto& d : datasets_) {
    auto lines = d.ledger->takeProblems();
    out.insert(out.end(), lines.begin(), lines.end());
  }
  return out;
}

}  // namespace fs::data

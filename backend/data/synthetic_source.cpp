#include "backend/data/synthetic_source.h"

#include <torch/torch.h>

#include <algorithm>

#include "backend/data/rng.h"
#include "backend/protocol/config/derived.h"

namespace fs::data {
namespace {

using protocol::Status;

constexpr float kClipMean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
constexpr float kClipStd[3] = {0.26862954f, 0.26130258f, 0.27577711f};

// Uniform ids over [0, vocab) minus the special ids.
class TextIds {
 public:
  explicit TextIds(const SpecialTokenIds& t) : vocab_(t.vocabSize) {
    for (int64_t id : {t.eos, t.pad, t.image, t.endofchunk}) {
      if (id >= 0 && id < vocab_ && std::find(skip_.begin(), skip_.end(), id) == skip_.end())
        skip_.push_back(id);
    }
    std::sort(skip_.begin(), skip_.end());
  }
  int64_t draw(Rng& rng) const {
    auto id =
        static_cast<int64_t>(rng.below(static_cast<uint64_t>(vocab_ - static_cast<int64_t>(skip_.size()))));
    for (int64_t s : skip_) {
      if (id >= s) ++id;
    }
    return id;
  }
  void append(Rng& rng, int64_t count, std::vector<int64_t>& out) const {
    for (int64_t i = 0; i < count; ++i) out.push_back(draw(rng));
  }

 private:
  int64_t vocab_;
  std::vector<int64_t> skip_;
};

std::vector<int64_t> laionSample(Rng& rng, const SyntheticDatasetSpec& spec, const SpecialTokenIds& t,
                                 const TextIds& text) {
  const int64_t L = spec.maxTokens;
  int64_t caption = rng.coin(0.2) ? rng.range(L - 2, L + 8) : rng.range(1, L - 3);
  caption = std::max<int64_t>(1, caption);
  std::vector<int64_t> seq{t.image};
  text.append(rng, caption, seq);
  seq.push_back(t.endofchunk);
  seq.push_back(t.eos);
  if (static_cast<int64_t>(seq.size()) > L) seq.resize(static_cast<size_t>(L));
  return seq;
}

// Returns the (untruncated) image count; `seq` is truncated to max_tokens.
int64_t mmc4Sample(Rng& rng, const SyntheticDatasetSpec& spec, const SpecialTokenIds& t, const TextIds& text,
                   std::vector<int64_t>& seq) {
  const int64_t L = spec.maxTokens;
  const int64_t maxImages = std::max<int64_t>(1, spec.maxNumImages);
  const int64_t need = std::clamp<int64_t>(spec.minNumImages, 1, maxImages);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int64_t n = rng.range(need, maxImages);
    const int64_t lead = rng.coin(0.5) ? 0 : rng.range(1, 4);
    const int64_t budget = std::max<int64_t>(n, L - lead - 2 * n - 1);
    const int64_t total = rng.coin(0.25) ? budget * 3 / 2 + 1 : rng.range(n, budget);
    int64_t rest = total - n;
    seq.clear();
    text.append(rng, lead, seq);
    for (int64_t i = 0; i < n; ++i) {
      int64_t extra = rest;
      if (i + 1 < n) extra = std::min(rest, rng.range(0, 2 * rest / (n - i)));
      rest -= extra;
      if (i > 0) seq.push_back(t.endofchunk);
      seq.push_back(t.image);
      text.append(rng, 1 + extra, seq);
    }
    seq.push_back(t.endofchunk);
    seq.push_back(t.eos);
    if (static_cast<int64_t>(seq.size()) > L) seq.resize(static_cast<size_t>(L));
    const auto kept = std::count(seq.begin(), seq.end(), t.image);
    if (kept < need) continue;
    if (kept == 1 && rng.coin(0.5)) continue;
    if (kept == 1 && seq.back() == t.image) continue;
    return n;
  }
  // Practically unreachable: the smallest valid document.
  seq = {t.image, text.draw(rng), t.endofchunk, t.eos};
  if (static_cast<int64_t>(seq.size()) > L) seq.resize(static_cast<size_t>(std::max<int64_t>(2, L)));
  return 1;
}

void fillImage(Rng& rng, float* dst, int64_t side) {
  const int64_t plane = side * side;
  for (int c = 0; c < 3; ++c) {
    const float mean = kClipMean[c], inv = 1.0f / kClipStd[c];
    for (int64_t i = 0; i < plane; ++i) *dst++ = (rng.unitFloat() - mean) * inv;
  }
}

}  // namespace

Batch makeSyntheticBatch(const SyntheticDatasetSpec& spec, const SpecialTokenIds& tokens, uint64_t seed,
                         int64_t epoch, int64_t rank, int64_t world, int64_t datasetIndex,
                         int64_t batchIndex) {
  const int64_t B = spec.batchSize;
  const bool laion = spec.kind == DatasetKind::kLaion;
  const int64_t T = laion ? 1 : std::max<int64_t>(1, spec.maxNumImages);
  const int64_t side = spec.imageSize;
  const TextIds text(tokens);
  // Global sample index of the batch's first sample: rank r's batch k holds
  // slice r of the global batch k (NOTE [Synthetic layout]).
  const int64_t first = (batchIndex * world + rank) * B;
  auto sampleKey = [&](int64_t b, uint64_t salt) {
    return mixKey({seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(datasetIndex),
                   static_cast<uint64_t>(first + b), salt});
  };

  std::vector<std::vector<int64_t>> seqs(static_cast<size_t>(B));
  std::vector<int64_t> realImages(static_cast<size_t>(B), 1);
  for (int64_t b = 0; b < B; ++b) {
    Rng rng(sampleKey(b, 0x7E47ULL));
    if (laion) {
      seqs[b] = laionSample(rng, spec, tokens, text);
    } else {
      realImages[b] = mmc4Sample(rng, spec, tokens, text, seqs[b]);
    }
  }
  int64_t L = spec.maxTokens;
  if (laion) {
    L = 0;
    for (const auto& s : seqs) L = std::max<int64_t>(L, static_cast<int64_t>(s.size()));
  }

  Batch batch;
  batch.dataset = spec.name;
  batch.kind = spec.kind;
  batch.samples = B;
  batch.index = batchIndex;
  batch.inputIds = torch::full({B, L}, tokens.pad, torch::kInt64);
  batch.attentionMask = torch::zeros({B, L}, torch::kInt64);
  auto ids = batch.inputIds.accessor<int64_t, 2>();
  auto mask = batch.attentionMask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    for (size_t i = 0; i < seqs[b].size(); ++i) {
      ids[b][static_cast<int64_t>(i)] = seqs[b][i];
      mask[b][static_cast<int64_t>(i)] = 1;
    }
    batch.tokens += static_cast<int64_t>(seqs[b].size());
  }

  // Images from a generator of their own so a change of image size leaves the ids alone.
  batch.images = torch::zeros({B, T, 1, 3, side, side}, torch::kFloat32);
  float* px = batch.images.data_ptr<float>();
  const int64_t perImage = 3 * side * side;
  for (int64_t b = 0; b < B; ++b) {
    Rng imageRng(sampleKey(b, 0x1A5EULL));
    for (int64_t k = 0; k < std::min(realImages[b], T); ++k)
      fillImage(imageRng, px + (b * T + k) * perImage, side);
  }
  return batch;
}

protocol::StatusOr<std::unique_ptr<SyntheticSource>> SyntheticSource::create(
    const protocol::RunConfig& config, int64_t rank, int64_t world) {
  if (world < 1 || rank < 0 || rank >= world) {
    return Status::invalidArgument("synthetic data: rank " + std::to_string(rank) +
                                   " is outside world size " + std::to_string(world));
  }
  const auto& ds = config.data.datasets;
  if (ds.empty()) return Status::invalidArgument("data.datasets: at least one dataset is needed");
  const SpecialTokenIds tokens = specialTokensFromConfig(config.model.tokens);
  for (auto [id, key] :
       {std::pair{tokens.eos, "eos_id"}, std::pair{tokens.pad, "pad_id"}, std::pair{tokens.image, "image_id"},
        std::pair{tokens.endofchunk, "endofchunk_id"}}) {
    if (id < 0 || id >= tokens.vocabSize) {
      return Status::invalidArgument("model.tokens." + std::string(key) + ": " + std::to_string(id) +
                                     " is outside the vocabulary (vocab_size " +
                                     std::to_string(tokens.vocabSize) + ")");
    }
  }
  if (tokens.image == tokens.endofchunk || tokens.image == tokens.pad || tokens.endofchunk == tokens.pad) {
    return Status::invalidArgument("model.tokens: image_id, endofchunk_id and pad_id must differ");
  }
  if (tokens.vocabSize <= 4) return Status::invalidArgument("model.tokens.vocab_size: no room for text ids");
  if (config.model.vision.image_size < 1) {
    return Status::invalidArgument("model.vision.image_size: must be positive");
  }

  // Figures for this world size, whatever the launch section says.
  protocol::RunConfig sized = config;
  sized.launch.nnodes = 1;
  sized.launch.nproc_per_node = world;
  const protocol::DerivedFigures figures = protocol::deriveFigures(sized);

  std::unique_ptr<SyntheticSource> src(new SyntheticSource());
  for (size_t i = 0; i < ds.size(); ++i) {
    const auto& d = ds[i];
    const std::string path = "data.datasets[" + std::to_string(i) + "]";
    const auto kind = datasetKindFromString(d.type);
    if (!kind) return Status::invalidArgument(path + ".type: '" + d.type + "' is not laion or mmc4");
    if (d.batch_size < 1) return Status::invalidArgument(path + ".batch_size: must be positive");
    SyntheticDatasetSpec spec;
    spec.name = d.name;
    spec.kind = *kind;
    spec.batchSize = d.batch_size;
    spec.maxTokens = protocol::resolvedMaxTokens(d);
    spec.maxNumImages = *kind == DatasetKind::kMmc4 ? std::max<int64_t>(1, d.max_num_images) : 1;
    spec.minNumImages = d.min_num_images;
    spec.imageSize = config.model.vision.image_size;
    if (spec.maxTokens < 4)
      return Status::invalidArgument(path + ".max_tokens: at least 4 tokens are needed");
    src->specs_.push_back(spec);
  }
  src->infos_ = datasetInfos(config, world);
  src->tokens_ = tokens;
  src->seed_ = static_cast<uint64_t>(config.seed);
  src->rank_ = rank;
  src->world_ = world;
  src->stepsPerEpoch_ = figures.stepsPerEpoch;
  src->consumed_.assign(ds.size(), 0);
  return src;
}

protocol::StatusOr<std::optional<StepBatches>> SyntheticSource::next() {
  const int64_t step = *std::min_element(consumed_.begin(), consumed_.end());
  if (step >= stepsPerEpoch_) return std::optional<StepBatches>();
  StepBatches out;
  out.epoch = epoch_;
  out.step = step;
  out.batches.reserve(specs_.size());
  for (size_t i = 0; i < specs_.size(); ++i) {
    out.batches.push_back(makeSyntheticBatch(specs_[i], tokens_, seed_, epoch_, rank_, world_,
                                             static_cast<int64_t>(i), consumed_[i]));
    ++consumed_[i];
  }
  return std::optional<StepBatches>(std::move(out));
}

void SyntheticSource::setEpoch(int64_t epoch) {
  epoch_ = epoch;
  std::fill(consumed_.begin(), consumed_.end(), 0);
}

DataPosition SyntheticSource::position() const {
  DataPosition p;
  p.source = "synthetic";
  p.epoch = epoch_;
  p.rank = rank_;
  p.world = world_;
  for (const auto& s : specs_) {
    p.datasets.push_back(s.name);
    p.batchSizes.push_back(s.batchSize);
  }
  p.batchesConsumed = consumed_;
  return p;
}

protocol::Status SyntheticSource::restore(const DataPosition& p) {
  if (Status s = checkResumable(position(), p, stepsPerEpoch_); !s) return s;
  epoch_ = p.epoch;
  consumed_ = p.batchesConsumed;
  return Status::ok();
}

}  // namespace fs::data

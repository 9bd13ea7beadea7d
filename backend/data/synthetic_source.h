// Deterministic LAION-like and MMC4-like batches without any files: what the
// tiny preset, `flamingo-train demo`, tests and benchmarks train on.
//
// NOTE [Synthetic layout]: token ids are laid out as the real formats
// produce them (spec section 3), so the label rules see realistic sequences:
//   LAION  <image> caption <|endofchunk|> eos, truncated to the first
//          max_tokens (about one caption in five overflows and loses its
//          end), right-padded to the longest sample of the batch.
//   MMC4   [text] <image> text (<|endofchunk|> <image> text)* <|endofchunk|>
//          eos, 1..max_num_images images, truncated to max_tokens (about one
//          document in four overflows) and padded to exactly max_tokens.
//          Documents the reference would reject are redrawn: fewer than
//          max(1, min_num_images) <image> tokens after truncation, a single
//          image dropped with probability 0.5, or a single image as the last
//          token. So every MMC4 sample has at least one supervised token.
// Caption and text ids are uniform over the vocabulary minus the special ids
// (no BOS is prepended, unlike OPT / LLaMA tokenizers). Images are uniform
// pixels in [0, 1) normalised with the CLIP mean and std; an MMC4 document
// with n images fills the first n of its max_num_images slots and leaves the
// rest zero, as the reference pads.
// A sample is a pure function of (seed, epoch, dataset index, global sample
// index), and rank r of `world` gets slice r of each global batch: batch k
// holds global samples (k x world + r) x batch_size onwards. So N ranks x b
// samples see exactly the samples of one rank with N x b (the DDP
// equivalence), and a position carries over to another world size by
// samples. No state beyond the position, so restore() is exact.
//
// Thread-safety: a source is used by one thread; makeSyntheticBatch is pure.
#pragma once

#include <memory>

#include "backend/data/data_source.h"
#include "backend/data/special_tokens.h"
#include "backend/protocol/config/config_types.h"

namespace fs::data {

struct SyntheticDatasetSpec {
  std::string name;
  DatasetKind kind = DatasetKind::kLaion;
  int64_t batchSize = 1;
  int64_t maxTokens = 32;
  int64_t maxNumImages = 1;  // MMC4 only
  int64_t minNumImages = 1;  // MMC4 only
  int64_t imageSize = 224;
};

// Batch `batchIndex` of dataset `datasetIndex` in `epoch` on `rank` of `world`.
// REQUIRES: batchSize, maxTokens, imageSize > 0; the special ids inside the
// vocabulary and at least one other id.
Batch makeSyntheticBatch(const SyntheticDatasetSpec& spec, const SpecialTokenIds& tokens, uint64_t seed,
                         int64_t epoch, int64_t rank, int64_t world, int64_t datasetIndex,
                         int64_t batchIndex);

class SyntheticSource final : public DataSource {
 public:
  // Validates what the generator needs (rank < world, known dataset types,
  // token ids, sizes) and names the offending field.
  static protocol::StatusOr<std::unique_ptr<SyntheticSource>> create(const protocol::RunConfig& config,
                                                                     int64_t rank, int64_t world);

  protocol::StatusOr<std::optional<StepBatches>> next() override;
  void setEpoch(int64_t epoch) override;
  int64_t epoch() const override { return epoch_; }
  int64_t stepsPerEpoch() const override { return stepsPerEpoch_; }
  const std::vector<DatasetInfo>& datasets() const override { return infos_; }
  DataPosition position() const override;
  protocol::Status restore(const DataPosition& position) override;

 private:
  SyntheticSource() = default;

  std::vector<SyntheticDatasetSpec> specs_;
  std::vector<DatasetInfo> infos_;
  SpecialTokenIds tokens_;
  uint64_t seed_ = 0;
  int64_t rank_ = 0;
  int64_t world_ = 1;
  int64_t epoch_ = 0;
  int64_t stepsPerEpoch_ = 0;
  std::vector<int64_t> consumed_;
};

}  // namespace fs::data

// Sample-by-sample checks for `flamingo-train shards inspect / validate`:
// the same rules the training pipeline applies (laion_preparer.h,
// mmc4_preparer.h) when a tokenizer is given; without one, everything up to
// tokenisation (members present, JSON, base64, image decode, the MMC4 size
// and similarity rules).
//
// Thread-safety: a checker is used by one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/batch.h"
#include "backend/data/documents/mmc4_document.h"
#include "backend/data/sample_preparer.h"
#include "backend/data/shards/tar_samples.h"
#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data {

struct ShardCheckOptions {
  std::optional<DatasetKind> kind;             // nullopt: a sample with json text_list is MMC4, else LAION
  std::shared_ptr<const Tokenizer> tokenizer;  // may be null
  int64_t imageSize = 224;
  int64_t maxTokens = 0;  // 0: the type's default (32 / 256)
  int64_t maxNumImages = 6;
  int64_t minNumImages = 1;
  double simThreshold = 0.24;  // the released recipe's value (train.py's default 30 rejects everything)
  uint64_t seed = 0;           // for the single-image coin
  // kBestSentence: OpenFlamingo 2.0.1's rules (`compat: openflamingo`), NOTE [MMC4 assignment].
  Mmc4Assignment mmc4Assignment = Mmc4Assignment::kOneToOne;
};

struct SampleVerdict {
  DatasetKind kind = DatasetKind::kLaion;
  std::optional<SampleDrop> drop;  // nullopt: the sample trains
  std::string summary;             // one line: caption / sentences, images, tokens
};

class SampleChecker {
 public:
  explicit SampleChecker(ShardCheckOptions options);
  SampleVerdict check(const Sample& sample);

 private:
  std::string describe(const Sample& sample, DatasetKind kind) const;
  std::optional<SampleDrop> checkLaionLight(const Sample& sample, std::string& summary);
  std::optional<SampleDrop> checkMmc4Light(const Sample& sample, std::string& summary);

  ShardCheckOptions options_;
  std::unique_ptr<SamplePreparer> laion_;
  std::unique_ptr<SamplePreparer> mmc4_;
  std::vector<float> pixels_;
  Rng rng_;
};

}  // namespace fs::data

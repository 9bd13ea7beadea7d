// Turns one raw WebDataset sample into what a batch row holds: token ids
// (truncated, not padded) and normalised pixels. One implementation per
// dataset kind (laion_preparer.h, mmc4_preparer.h).
//
// Thread-safety: prepare() is const and called from several worker threads
// at once; all per-call state comes in through the arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/data/rng.h"
#include "backend/data/shards/tar_samples.h"

namespace fs::data {

struct SampleDrop {
  std::string reason;  // stable name: bad_image, missing_field, too_few_images, ...
  std::string detail;  // for the problem log
};

struct SampleSlot {
  // imagesPerSample x 3 x H x W floats, holding whatever an older batch left
  // there. prepare() writes image slots from the first on and counts them in
  // `imagesWritten` (a slot counts once its writing begins); the worker
  // zeroes the slots after those (the reference's padding images).
  float* pixels = nullptr;
  int64_t imagesWritten = 0;
  std::vector<int64_t> ids;
};

class SamplePreparer {
 public:
  virtual ~SamplePreparer() = default;

  // Fills `slot` from `sample`, or says why the sample is dropped. `rng` is
  // the worker's generator (MMC4's flip and single-image coins); `batchFlip`
  // is LAION's one coin for the whole batch.
  virtual std::optional<SampleDrop> prepare(const Sample& sample, Rng& rng, bool batchFlip,
                                            SampleSlot& slot) const = 0;

  // LAION pads each batch to its longest row; MMC4 to max_tokens.
  virtual bool padToMaxTokens() const = 0;
  // LAION draws one flip coin per batch before its samples are prepared.
  virtual bool flipPerBatch() const = 0;
};

}  // namespace fs::data

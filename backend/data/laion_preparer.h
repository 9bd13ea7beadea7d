// LAION image-text pairs (spec section 3, "LAION"): the first of jpg / png /
// jpeg and the txt member; CLIP preprocessing into the batch row; the caption
// as `<image>{caption.strip()}<|endofchunk|>{eos}`, tokenised with the
// family's BOS and truncated to the first max_tokens ids.
//
// Unlike the reference, a bad image drops only its sample, not the whole
// batch it was batched with (the reference batches before preprocessing);
// the batch is refilled from the next samples.
//
// Thread-safety: prepare() is const; the tokenizer is shared read-only.
#pragma once

#include <memory>

#include "backend/data/image/clip_preprocess.h"
#include "backend/data/sample_preparer.h"
#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data {

class LaionPreparer final : public SamplePreparer {
 public:
  LaionPreparer(std::shared_ptr<const Tokenizer> tokenizer, int64_t imageSize, int64_t maxTokens);

  std::optional<SampleDrop> prepare(const Sample& sample, Rng& rng, bool batchFlip,
                                    SampleSlot& slot) const override;
  bool padToMaxTokens() const override { return false; }
  bool flipPerBatch() const override { return true; }

  // The caption text before tokenisation (exposed for tests and `shards inspect`).
  std::string captionText(std::string_view caption) const;

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
  int64_t imageSize_;
  int64_t maxTokens_;
};

// The sample's image member: the first of jpg, png, jpeg (the reference's
// order); nullptr when it has none.
const Bytes* findLaionImage(const Sample& sample);

// This thread's CLIP preprocessor for `imageSize` (shared by the preparers).
ClipPreprocessor& threadClipPreprocessor(int64_t imageSize);

// This thread's reusable decode target (shared by the preparers).
RgbImage& threadDecodeBuffer();

// Python's str.strip() for the whitespace that occurs in captions: ASCII
// whitespace, NBSP and the other Unicode spaces, as UTF-8.
std::string_view stripWhitespace(std::string_view text);

}  // namespace fs::data

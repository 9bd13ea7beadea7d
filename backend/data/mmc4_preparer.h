// MMC4 interleaved documents (spec section 3, "MMC4"): the json member is
// parsed and planned by documents/mmc4_document.h, the text is tokenised and
// truncated to max_tokens and the post-tokenisation rules run on the ids;
// then the plan's images to decode are decoded (by default every valid
// image, with `compat: openflamingo` only those 2.0.1 decodes: NOTE [MMC4
// assignment] in documents/mmc4_document.h; a failure rejects the document,
// as in the reference) and the kept images are CLIP-preprocessed into the
// first slots of the row (the worker zeroes the rest: the reference's padding).
//
// NOTE [MMC4 check order]
// The reference decodes the images before it tokenises. We run the token
// rules first: they need no pixels, and about a quarter of MMC4 documents
// fail them, whose decoding would be wasted. The documents kept and their
// contents are the same either way; only a document that fails both a token
// rule and an image decode is counted under the token rule's reason instead
// of bad_image.
//
// Random draws per document, from the worker's generator, in this order: the
// flip coin (all images of a document flip together), then the single-image
// coin of checkMmc4Tokens when it applies.
//
// Thread-safety: prepare() is const; the tokenizer is shared read-only.
#pragma once

#include <memory>

#include "backend/data/documents/mmc4_document.h"
#include "backend/data/sample_preparer.h"
#include "backend/data/tokenizer/tokenizer.h"

namespace fs::data {

struct Mmc4PrepareOptions {
  int64_t maxTokens = 256;
  int64_t imageSize = 224;
  int64_t maxNumImages = 6;
  int64_t minNumImages = 1;
  double simThreshold = 30.0;
  // kOneToOne by default; kBestSentence for `compat: openflamingo` (2.0.1's rules).
  Mmc4Assignment assignment = Mmc4Assignment::kOneToOne;
};

class Mmc4Preparer final : public SamplePreparer {
 public:
  Mmc4Preparer(std::shared_ptr<const Tokenizer> tokenizer, Mmc4PrepareOptions options);

  std::optional<SampleDrop> prepare(const Sample& sample, Rng& rng, bool batchFlip,
                                    SampleSlot& slot) const override;
  bool padToMaxTokens() const override { return true; }
  bool flipPerBatch() const override { return false; }

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;
  Mmc4PrepareOptions options_;
};

}  // namespace fs::data

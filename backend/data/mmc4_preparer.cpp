#include "backend/data/mmc4_preparer.h"

#include "backend/data/documents/mmc4_document.h"
#include "backend/data/documents/mmc4_tokens.h"
#include "backend/data/image/image_codec.h"
#include "backend/data/laion_preparer.h"

namespace fs::data {

Mmc4Preparer::Mmc4Preparer(std::shared_ptr<const Tokenizer> tokenizer, Mmc4PrepareOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {}

std::optional<SampleDrop> Mmc4Preparer::prepare(const Sample& sample, Rng& rng, bool /*batchFlip*/,
                                                SampleSlot& slot) const {
  const Bytes* json = sample.find("json");
  if (!json) return SampleDrop{"missing_json", "no json member"};
  auto doc = parseMmc4Document({reinterpret_cast<const char*>(json->data()), json->size()});
  if (!doc.isOk()) return SampleDrop{mmc4ReasonName(doc.rejection().reason), doc.rejection().message};

  Mmc4Options planOptions;
  planOptions.simThreshold = options_.simThreshold;
  planOptions.maxNumImages = options_.maxNumImages;
  planOptions.eosText = tokenizer_->eosToken();
  planOptions.assignment = options_.assignment;
  auto plan = planMmc4Sample(doc.value(), planOptions);
  if (!plan.isOk()) return SampleDrop{mmc4ReasonName(plan.rejection().reason), plan.rejection().message};

  const bool flip = rng.coin(0.5);
  // The token rules first: they need no pixels, and decoding the images of
  // a document they reject would be wasted (NOTE in mmc4_preparer.h).
  slot.ids = tokenizer_->encode(plan.value().text);
  if (static_cast<int64_t>(slot.ids.size()) > options_.maxTokens)
    slot.ids.resize(static_cast<size_t>(options_.maxTokens));
  Mmc4TokenRules rules;
  rules.imageTokenId = tokenizer_->imageId();
  rules.maxTokens = options_.maxTokens;
  rules.minNumImages = options_.minNumImages;
  if (auto reason = checkMmc4Tokens(slot.ids, rules, rng)) {
    return SampleDrop{mmc4ReasonName(*reason), std::to_string(slot.ids.size()) + " tokens"};
  }

  ClipPreprocessor& clip = threadClipPreprocessor(options_.imageSize);
  const size_t stride = clip.outputSize();
  const auto& kept = plan.value().keptImages;
  size_t slotIndex = 0;
  for (size_t index : plan.value().decodeImages) {
    const std::string& bytes = *doc.value().images[index];
    RgbImage& image = threadDecodeBuffer();
    if (auto s = decodeImageInto({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, image);
        !s) {
      return SampleDrop{"bad_image", "image_info[" + std::to_string(index) + "]: " + s.message()};
    }
    if (slotIndex < kept.size() && kept[slotIndex] == index) {
      slot.imagesWritten = static_cast<int64_t>(slotIndex) + 1;
      if (auto s = clip.run(image, flip, {slot.pixels + slotIndex * stride, stride}); !s) {
        return SampleDrop{"bad_image", "image_info[" + std::to_string(index) + "]: " + s.message()};
      }
      ++slotIndex;
    }
  }
  return std::nullopt;
}

}  // namespace fs::data

#include "backend/data/shard_check.h"

#include <algorithm>

#include "backend/data/documents/mmc4_document.h"
#include "backend/data/image/image_codec.h"
#include "backend/data/laion_preparer.h"
#include "backend/data/mmc4_preparer.h"

namespace fs::data {

namespace {

std::string_view text(const Bytes& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::string shorten(std::string_view s, size_t n = 80) {
  std::string out(s.substr(0, n));
  for (char& c : out) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  return s.size() > n ? out + "..." : out;
}

bool looksLikeMmc4(const Sample& s) {
  const Bytes* json = s.find("json");
  return json && text(*json).find("\"text_list\"") != std::string_view::npos;
}

}  // namespace

SampleChecker::SampleChecker(ShardCheckOptions options) : options_(std::move(options)), rng_(options_.seed) {
  if (options_.tokenizer) {
    laion_ = std::make_unique<LaionPreparer>(options_.tokenizer, options_.imageSize,
                                             options_.maxTokens > 0 ? options_.maxTokens : 32);
    Mmc4PrepareOptions mo;
    mo.maxTokens = options_.maxTokens > 0 ? options_.maxTokens : 256;
    mo.imageSize = options_.imageSize;
    mo.maxNumImages = options_.maxNumImages;
    mo.minNumImages = options_.minNumImages;
    mo.simThreshold = options_.simThreshold;
    mo.assignment = options_.mmc4Assignment;
    mmc4_ = std::make_unique<Mmc4Preparer>(options_.tokenizer, mo);
  }
  pixels_.resize(static_cast<size_t>(std::max<int64_t>(1, options_.maxNumImages) * 3 * options_.imageSize *
                                     options_.imageSize));
}

SampleVerdict SampleChecker::check(const Sample& sample) {
  SampleVerdict v;
  v.kind = options_.kind.value_or(looksLikeMmc4(sample) ? DatasetKind::kMmc4 : DatasetKind::kLaion);
  if (options_.tokenizer) {
    SampleSlot slot;
    slot.pixels = pixels_.data();
    auto& preparer = v.kind == DatasetKind::kLaion ? *laion_ : *mmc4_;
    v.drop = preparer.prepare(sample, rng_, false, slot);
    v.summary = describe(sample, v.kind) + (v.drop ? "" : ", " + std::to_string(slot.ids.size()) + " tokens");
  } else {
    v.drop = v.kind == DatasetKind::kLaion ? checkLaionLight(sample, v.summary)
                                           : checkMmc4Light(sample, v.summary);
  }
  return v;
}

// One line about the sample from its members alone (no decoding).
std::string SampleChecker::describe(const Sample& sample, DatasetKind kind) const {
  if (kind == DatasetKind::kMmc4) {
    const Bytes* json = sample.find("json");
    if (!json) return "mmc4";
    auto doc = parseMmc4Document(text(*json));
    if (!doc.isOk()) return "mmc4";
    return "mmc4: " + std::to_string(doc.value().sentences.size()) + " sentences, " +
           std::to_string(doc.value().images.size()) + " images";
  }
  const Bytes* caption = sample.find("txt");
  std::string out = "laion: \"" + (caption ? shorten(stripWhitespace(text(*caption))) : std::string()) + "\"";
  if (const Bytes* image = findLaionImage(sample)) {
    if (auto size = decodeImageSize(*image))
      out += ", " + std::to_string(size->width) + "x" + std::to_string(size->height);
  }
  return out;
}

std::optional<SampleDrop> SampleChecker::checkLaionLight(const Sample& sample, std::string& summary) {
  summary = describe(sample, DatasetKind::kLaion);
  const Bytes* image = findLaionImage(sample);
  if (!image) return SampleDrop{"missing_image", "no jpg, png or jpeg member"};
  if (!sample.find("txt")) return SampleDrop{"missing_text", "no txt member"};
  auto decoded = decodeImage(*image);
  if (!decoded) return SampleDrop{"bad_image", decoded.status().message()};
  return std::nullopt;
}

std::optional<SampleDrop> SampleChecker::checkMmc4Light(const Sample& sample, std::string& summary) {
  summary = "mmc4";
  const Bytes* json = sample.find("json");
  if (!json) return SampleDrop{"missing_json", "no json member"};
  auto doc = parseMmc4Document(text(*json));
  if (!doc.isOk()) return SampleDrop{mmc4ReasonName(doc.rejection().reason), doc.rejection().message};
  summary += ": " + std::to_string(doc.value().sentences.size()) + " sentences, " +
             std::to_string(doc.value().images.size()) + " images";
  Mmc4Options po;
  po.simThreshold = options_.simThreshold;
  po.maxNumImages = options_.maxNumImages;
  po.assignment = options_.mmc4Assignment;
  auto plan = planMmc4Sample(doc.value(), po);
  if (!plan.isOk()) return SampleDrop{mmc4ReasonName(plan.rejection().reason), plan.rejection().message};
  summary += " (" + std::to_string(plan.value().validImages.size()) + " over 10 KB, " +
             std::to_string(plan.value().keptImages.size()) + " kept)";
  for (size_t index : plan.value().decodeImages) {
    const std::string& bytes = *doc.value().images[index];
    auto image = decodeImage({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    if (!image)
      return SampleDrop{"bad_image",
                        "image_info[" + std::to_string(index) + "]: " + image.status().message()};
  }
  return std::nullopt;
}

}  // namespace fs::data

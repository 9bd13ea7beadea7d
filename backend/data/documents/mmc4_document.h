// The MMC4 sample rules of OpenFlamingo, torch-free: from one document's
// JSON to the text to tokenise and the images to keep, and the rejection
// rules applied to the token ids. Spec: shared/spec/openflamingo.md, section
// 3 "MMC4"; the reference is open_flamingo/train/data.py
// (`preprocess_interleaved`) of OpenFlamingo's main branch, whose order of
// steps is kept. The pinned open-flamingo wheel (2.0.1) differs in the
// assignment (each image to its best sentence, many to one) and decodes only
// the images that pass the threshold; docs/data.md lists what
// openflamingo_data_oracle_test pins:
//
//   parseMmc4Document      json -> sentences, decoded images, similarity
//   planMmc4Sample         >= 11,000-byte images -> assignment -> threshold
//                          -> first max images -> assembled text
//   (caller)               decode EVERY valid image (any failure rejects the
//                          document, even an image that is not kept), then
//                          tokenise, truncate to max tokens, pad
//   checkMmc4Tokens        too few <image> / single-image coin / image last
//                          (mmc4_tokens.h)
//
// Thread-safety: pure functions (parseMmc4Document reuses one simdjson
// parser per thread; its buffers grow to the largest document seen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fs::data {

// Why a document was dropped. The names are stable (counters, logs).
enum class Mmc4Reason {
  kBadJson,          // not JSON, a missing field, a wrong type or shape
  kBadBase64,        // an image_base64 that Python's b64decode refuses
  kGptUnsupported,   // an "is_gpt" document: the optional ChatGPT variant, refused and counted
  kNoValidImages,    // no image of at least 11,000 decoded bytes
  kBelowThreshold,   // no assigned image-sentence pair reaches the threshold
  kTooFewImages,     // fewer than min_num_images <image> tokens after truncation
  kSingleImageCoin,  // exactly one <image> token and the coin said drop
  kImageLastToken,   // exactly one <image> token and it fills the last slot
};
const char* mmc4ReasonName(Mmc4Reason reason);

struct Mmc4Rejection {
  Mmc4Reason reason;
  std::string message;  // names the field / value, e.g. "image_info[2].image_base64: ..."
};

// A value or the rejection explaining why there is none.
template <class T>
class Mmc4Result {
 public:
  Mmc4Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Mmc4Result(Mmc4Rejection r) : rejection_(std::move(r)) {}  // NOLINT
  bool isOk() const { return value_.has_value(); }
  const T& value() const& { return *value_; }                    // REQUIRES: isOk()
  T&& value() && { return std::move(*value_); }                  // REQUIRES: isOk()
  const Mmc4Rejection& rejection() const { return rejection_; }  // REQUIRES: !isOk()

 private:
  std::optional<T> value_;
  Mmc4Rejection rejection_{Mmc4Reason::kBadJson, {}};
};

struct Mmc4Document {
  std::vector<std::string> sentences;  // text_list
  // image_info[i].image_base64 decoded; nullopt for an entry without that
  // field, which the reference skips (it is never valid) rather than rejects.
  std::vector<std::optional<std::string>> images;
  std::vector<double> similarity;  // row-major, images.size() x sentences.size()
};

// Parses one document. Rejections: kBadJson (naming the field), kBadBase64
// (naming the entry), kGptUnsupported. Every present image_base64 is decoded,
// as the reference decodes each one before it looks at sizes.
Mmc4Result<Mmc4Document> parseMmc4Document(std::string_view json);

// `len(bytes) // 1000 > 10`: at least 11,000 bytes.
inline bool isValidMmc4ImageSize(size_t bytes) {
  return bytes / 1000 > 10;
}

struct Mmc4Options {
  double simThreshold = 30.0;    // mmc4_textsim_threshold (train.py default; the recipe uses 0.24)
  int64_t maxNumImages = 6;      // mmc4_max_num_images; REQUIRES: >= 1
  std::string eosText = "</s>";  // the tokenizer's eos_token as text
};

struct Mmc4Plan {
  // image_info indices of the images of >= 11,000 bytes, ascending. The
  // caller must decode all of them: a failure rejects the document even for
  // an image that is not kept.
  std::vector<size_t> validImages;
  // image_info indices of the images to stack, ascending, at most
  // maxNumImages; zero-padded to maxNumImages by the caller. Not trimmed
  // after truncation: an image whose <image> token is cut stays in the tensor.
  std::vector<size_t> keptImages;
  // keptSentences[k]: the sentence matched to keptImages[k]. The text puts
  // <image> tokens in sentence order, so the k-th <image> token is paired
  // with keptImages[k], which need not be the image matched to its sentence.
  std::vector<size_t> keptSentences;
  std::string text;  // the assembled text, eos included, to tokenise
};

// Valid images -> assignment on the negated similarity rows (as SciPy) ->
// drop pairs with similarity < simThreshold -> first maxNumImages by image
// index -> text. Rejections: kNoValidImages, kBelowThreshold.
Mmc4Result<Mmc4Plan> planMmc4Sample(const Mmc4Document& doc, const Mmc4Options& options);

// The reference's text assembly: prefix "<|endofchunk|><image>" to each
// sentence in `prefixed`, join all with one space, remove the first
// "<|endofchunk|>", replace every " <|endofchunk|>" by "<|endofchunk|>", then
// every "<image> " and then every " <image>" by "<image>" (each a single
// left-to-right pass, as Python's str.replace), append "<|endofchunk|>" + eos.
// REQUIRES: every index in `prefixed` < sentences.size(), no duplicates.
std::string assembleMmc4Text(std::vector<std::string> sentences, std::span<const size_t> prefixed,
                             std::string_view eosText);

}  // namespace fs::data

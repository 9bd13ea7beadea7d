// The MMC4 sample rules of OpenFlamingo, torch-free: from one document's
// JSON to the text to tokenise and the images to keep, and the rejection
// rules applied to the token ids. Spec: shared/spec/openflamingo.md, section
// 3 "MMC4"; the reference is open_flamingo/train/data.py
// (`preprocess_interleaved`). Two sets of rules (NOTE [MMC4 assignment]):
// by default OpenFlamingo's main branch (one-to-one assignment, every valid
// image decoded), whose order of steps is kept; with `compat: openflamingo`
// the 2.0.1 release (each image to its best sentence, only the images that
// pass decoded). docs/data.md lists what openflamingo_data_oracle_test pins:
//
//   parseMmc4Document      json -> sentences, decoded images, similarity
//   planMmc4Sample         one-to-one: >= 11,000-byte images -> assignment
//                          -> threshold -> first max images -> text
//                          best sentence: per image, its best sentence ->
//                          size and threshold -> first max images -> text
//   (caller)               decode plan.decodeImages (any failure rejects
//                          the document, even for an image that is not
//                          kept), tokenise, truncate to max tokens, pad
//   checkMmc4Tokens        too few <image> / single-image coin / image last
//                          (mmc4_tokens.h; the same in both)
//
// NOTE [MMC4 assignment]
// OpenFlamingo 2.0.1, the last release and the pinned wheel, gives each
// image with image_base64 its best sentence (numpy argmax over its
// similarity row: the first maximum), then skips it when it has fewer than
// 11,000 bytes or that best similarity is below the threshold, and decodes
// the images left (an image past mmc4_max_num_images too: the cut comes
// after). So several images can share one sentence (the text gets an empty
// "<image><|endofchunk|><image>" chunk), every image is kept however few
// sentences there are, and an undecodable image that fails the threshold is
// never looked at. OpenFlamingo's main branch, after 2.0.1, fixed the shared
// sentences: it assigns images to sentences one to one (SciPy's
// linear_sum_assignment on the valid images), checks the threshold on the
// assigned pair and decodes every image of 11,000 bytes or more, so an
// undecodable image rejects the document even when it matches nothing.
// The spec follows main and so does our default (kOneToOne); `compat:
// openflamingo` reproduces the release exactly (kBestSentence), as section
// 8 of the spec asks of compat mode. Both are checked against the code
// itself: the one-to-one assignment against SciPy (mmc4_document_test),
// 2.0.1 against the wheel's own preprocess_interleaved
// (openflamingo_data_oracle_test).
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

// How images are matched to sentences, and which images are decoded
// (NOTE [MMC4 assignment]).
enum class Mmc4Assignment {
  kOneToOne,      // default: linear sum assignment (OpenFlamingo main), every valid image decoded
  kBestSentence,  // compat: openflamingo: each image its best sentence (2.0.1), only those kept decoded
};

struct Mmc4Options {
  double simThreshold = 30.0;    // mmc4_textsim_threshold (train.py default; the recipe uses 0.24)
  int64_t maxNumImages = 6;      // mmc4_max_num_images; REQUIRES: >= 1
  std::string eosText = "</s>";  // the tokenizer's eos_token as text
  Mmc4Assignment assignment = Mmc4Assignment::kOneToOne;
};

struct Mmc4Plan {
  // image_info indices of the images of >= 11,000 bytes, ascending.
  std::vector<size_t> validImages;
  // image_info indices the caller must decode, ascending: a failure rejects
  // the document even for an image that is not kept. kOneToOne: every valid
  // image; kBestSentence: the valid images whose best sentence reaches the
  // threshold, also those past maxNumImages (2.0.1 cuts after decoding).
  std::vector<size_t> decodeImages;
  // image_info indices of the images to stack, ascending, at most
  // maxNumImages; zero-padded to maxNumImages by the caller. Not trimmed
  // after truncation: an image whose <image> token is cut stays in the tensor.
  std::vector<size_t> keptImages;
  // keptSentences[k]: the sentence matched to keptImages[k]; with
  // kBestSentence several images may share one. The text puts <image>
  // tokens in sentence order, so the k-th <image> token is paired with
  // keptImages[k], which need not be the image matched to its sentence.
  std::vector<size_t> keptSentences;
  std::string text;  // the assembled text, eos included, to tokenise
};

// kOneToOne: valid images -> assignment on the negated similarity rows (as
// SciPy) -> drop pairs with similarity < simThreshold -> first maxNumImages
// by image index -> text.
// kBestSentence: per image with image_base64, its best sentence (the first
// maximum of its row) -> drop it under 11,000 bytes or when that similarity
// is < simThreshold -> first maxNumImages by image index -> text. A document
// with images but no sentence is rejected (2.0.1's argmax of an empty row
// raises).
// Rejections: kNoValidImages, kBelowThreshold.
Mmc4Result<Mmc4Plan> planMmc4Sample(const Mmc4Document& doc, const Mmc4Options& options);

// The reference's text assembly: prefix "<|endofchunk|><image>" to each
// sentence in `prefixed`, join all with one space, remove the first
// "<|endofchunk|>", replace every " <|endofchunk|>" by "<|endofchunk|>", then
// every "<image> " and then every " <image>" by "<image>" (each a single
// left-to-right pass, as Python's str.replace), append "<|endofchunk|>" + eos.
// A sentence listed twice gets the prefix twice (2.0.1's shared sentence).
// REQUIRES: every index in `prefixed` < sentences.size().
std::string assembleMmc4Text(std::vector<std::string> sentences, std::span<const size_t> prefixed,
                             std::string_view eosText);

}  // namespace fs::data

#include "backend/data/laion_preparer.h"

#include "backend/data/image/clip_preprocess.h"
#include "backend/data/image/image_codec.h"

namespace fs::data {

namespace {

// Python's str.isspace() code points.
bool isPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The code point starting at `i` and its length; invalid UTF-8 is one byte
// that is never a space.
std::pair<char32_t, size_t> decodeAt(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1};
  const size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return {0xFFFD, 1};
  char32_t c = b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto cb = static_cast<unsigned char>(s[i + k]);
    if ((cb & 0xC0) != 0x80) return {0xFFFD, 1};
    c = (c << 6) | (cb & 0x3F);
  }
  return {c, len};
}

}  // namespace

ClipPreprocessor& threadClipPreprocessor(int64_t imageSize) {
  // ClipPreprocessor keeps scratch buffers and is single-threaded: one per
  // worker thread, rebuilt if a thread serves another image size.
  thread_local std::unique_ptr<ClipPreprocessor> clip;
  if (!clip || clip->options().cropSize != imageSize) {
    ClipPreprocessOptions o;
    o.resizeSize = o.cropSize = static_cast<int>(imageSize);
    clip = std::make_unique<ClipPreprocessor>(o);
  }
  return *clip;
}

const Bytes* findLaionImage(const Sample& sample) {
  for (const char* ext : {"jpg", "png", "jpeg"}) {
    if (const Bytes* image = sample.find(ext)) return image;
  }
  return nullptr;
}

RgbImage& threadDecodeBuffer() {
  // Reused per worker thread: a fresh image per sample costs more in page
  // faults than the JPEG decode itself.
  thread_local RgbImage image;
  return image;
}

std::string_view stripWhitespace(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    auto [c, n] = decodeAt(text, begin);
    if (!isPythonSpace(c)) break;
    begin += n;
  }
  // Scan forward, remembering where the last non-space code point ended.
  size_t end = begin;
  for (size_t i = begin; i < text.size();) {
    auto [c, n] = decodeAt(text, i);
    i += n;
    if (!isPythonSpace(c)) end = i;
  }
  return text.substr(begin, end - begin);
}

LaionPreparer::LaionPreparer(std::shared_ptr<const Tokenizer> tokenizer, int64_t imageSize, int64_t maxTokens)
    : tokenizer_(std::move(tokenizer)), imageSize_(imageSize), maxTokens_(maxTokens) {}

std::string LaionPreparer::captionText(std::string_view caption) const {
  std::string text = "<image>";
  text += stripWhitespace(caption);
  text += "<|endofchunk|>";
  text += tokenizer_->eosToken();
  return text;
}

std::optional<SampleDrop> LaionPreparer::prepare(const Sample& sample, Rng& /*rng*/, bool batchFlip,
                                                 SampleSlot& slot) const {
  const Bytes* image = findLaionImage(sample);
  if (!image) return SampleDrop{"missing_image", "no jpg, png or jpeg member"};
  const Bytes* caption = sample.find("txt");
  if (!caption) return SampleDrop{"missing_text", "no txt member"};

  RgbImage& decoded = threadDecodeBuffer();
  if (auto s = decodeImageInto(*image, decoded); !s) return SampleDrop{"bad_image", s.message()};
  ClipPreprocessor& clip = threadClipPreprocessor(imageSize_);
  slot.imagesWritten = 1;
  if (auto s = clip.run(decoded, batchFlip, {slot.pixels, clip.outputSize()}); !s) {
    return SampleDrop{"bad_image", s.message()};
  }

  const std::string_view text(reinterpret_cast<const char*>(caption->data()), caption->size());
  slot.ids = tokenizer_->encode(captionText(text));
  if (static_cast<int64_t>(slot.ids.size()) > maxTokens_) slot.ids.resize(static_cast<size_t>(maxTokens_));
  // Position 0 is never a target (labels shift by one); <image> and pad are
  // masked out of the loss.
  bool supervised = false;
  for (size_t t = 1; t < slot.ids.size(); ++t) {
    supervised = supervised || (slot.ids[t] != tokenizer_->imageId() && slot.ids[t] != tokenizer_->padId());
  }
  if (!supervised) return SampleDrop{"no_supervised_token", "max_tokens leaves no caption token"};
  return std::nullopt;
}

}  // namespace fs::data

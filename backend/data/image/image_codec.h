// Image decode and encode for the shard pipeline, matching what OpenFlamingo
// gets from PIL: `Image.open(bytes).convert("RGB")`.
//
// Thread-safety: every function is a pure function of its arguments and may be
// called from any number of threads at once. Nothing here touches OpenCV's
// thread pool or any process-wide setting.
//
// NOTE [PIL parity of decodeImage]
// - JPEG: decoded by libjpeg-turbo like PIL (same library on Debian, called
//   directly: jpeg_decode.h), EXIF orientation NOT applied (PIL does not
//   either). A JPEG whose entropy data ends before its EOI marker is refused
//   as truncated, as PIL does without LOAD_TRUNCATED_IMAGES (libjpeg alone
//   would pad it with gray); so is one where libjpeg fails only after the
//   last scan line, as PIL does ("broken data stream"). libjpeg's warnings
//   are ignored, as PIL ignores them. CMYK/YCCK JPEGs go through OpenCV and
//   convert to RGB with its formula, which differs from PIL's by up to a few
//   levels (rare in web data).
// - PNG: gray -> RGB, alpha dropped (no compositing), palette -> RGB,
//   16-bit RGB(A) -> high byte. 16-bit gray opens in PIL as mode "I" and its
//   RGB conversion clamps to 255; we reproduce that clamp.
// - WebP and BMP are decoded too (header-checked like the others); anything
//   else (GIF, TIFF, ...) is refused as Unsupported: OpenCV decodes some of
//   those through temporary files, and their headers are not checked.
// - Decompression bombs: the pixel count is read from the header before any
//   pixel is decoded; images over DecodeOptions::maxPixels are refused.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/data/image/image_header.h"
#include "backend/protocol/status.h"

namespace fs::data {

// An 8-bit RGB image, rows top to bottom, pixels interleaved R, G, B, no
// padding: pixel (x, y) channel c is at pixels[(y * width + x) * 3 + c].
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;

  bool empty() const { return width <= 0 || height <= 0; }
  std::uint8_t* row(int y) { return pixels.data() + static_cast<std::size_t>(y) * width * 3; }
  const std::uint8_t* row(int y) const { return pixels.data() + static_cast<std::size_t>(y) * width * 3; }
};

struct DecodeOptions {
  // PIL raises DecompressionBombError above 2 * Image.MAX_IMAGE_PIXELS
  // (2 * 89478485); below that it only warns, so the reference keeps those.
  std::int64_t maxPixels = kPilBombErrorPixels;
};

// Decodes JPEG / PNG / WebP / BMP bytes into RGB as described above.
// Errors: Corruption (truncated, damaged or empty bytes), Unsupported (not one
// of those formats), InvalidArgument (over the pixel limit). Never throws.
protocol::StatusOr<RgbImage> decodeImage(std::span<const std::uint8_t> bytes,
                                         const DecodeOptions& options = {});

// The same into `out`, reusing its storage: a worker that keeps one RgbImage
// avoids a fresh allocation (and its page faults) per image. On error `out`
// is left empty.
protocol::Status decodeImageInto(std::span<const std::uint8_t> bytes, RgbImage& out,
                                 const DecodeOptions& options = {});

// Baseline JPEG, 4:2:0 chroma subsampling (OpenCV's default), quality 1..100.
// REQUIRES: !image.empty() and pixels.size() == width * height * 3.
protocol::StatusOr<std::vector<std::uint8_t>> encodeJpeg(const RgbImage& image, int quality = 95);

// Lossless 8-bit RGB PNG.
protocol::StatusOr<std::vector<std::uint8_t>> encodePng(const RgbImage& image);

}  // namespace fs::data

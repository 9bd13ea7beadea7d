// Image headers read without decoding: format, size and the few facts the
// decoder needs (PNG bit depth / colour type, where a JPEG's scan starts).
// Used for the decompression-bomb check before decoding and by the shard
// inspector. Reads at most the bytes up to the first JPEG scan; never throws.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/protocol/status.h"

namespace fs::data {

// PIL's Image.MAX_IMAGE_PIXELS = 1024^3 / 4 / 3; it raises above twice that.
inline constexpr std::int64_t kPilMaxImagePixels = 89478485;
inline constexpr std::int64_t kPilBombErrorPixels = 2 * kPilMaxImagePixels;

enum class ImageFormat { kJpeg, kPng, kWebp, kBmp };

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  int width = 0;
  int height = 0;
  int channels = 0;                // JPEG components, PNG channels before expansion
  int bitDepth = 8;                // PNG bit depth; JPEG sample precision
  int pngColorType = -1;           // PNG IHDR colour type, -1 for other formats
  std::size_t jpegScanOffset = 0;  // offset just past the first SOS header
};

const char* formatName(ImageFormat format);

// Errors: Unsupported (unknown magic), Corruption (a known format whose
// header is cut short or inconsistent, or a zero size).
protocol::StatusOr<ImageHeader> decodeImageHeader(std::span<const std::uint8_t> bytes);

struct ImageSize {
  int width = 0;
  int height = 0;
};

// The size alone; same errors as decodeImageHeader.
protocol::StatusOr<ImageSize> decodeImageSize(std::span<const std::uint8_t> bytes);

}  // namespace fs::data

// CLIP image preprocessing as OpenFlamingo gets it from open_clip/torchvision
// on a PIL RGB image: Resize(resizeSize, BICUBIC) on the shorter side,
// CenterCrop(cropSize), ToTensor, Normalize(mean, std); plus an optional
// horizontal flip applied while writing, so a batch-wide flip costs nothing.
//
// NOTE [torchvision geometry]
// - Resize(int): shorter side -> resizeSize, longer side ->
//   int(resizeSize * long / short) (truncation, double division); a square
//   image goes to resizeSize x resizeSize; an image whose shorter side already
//   equals resizeSize is left untouched. Pixels: PIL bicubic (pil_resample.h).
// - CenterCrop: offset int(round((n - crop) / 2.0)) per axis with Python's
//   round (ties to even). An axis shorter than the crop is first zero-padded
//   by (crop - n) // 2 before and the rest after, so the crop starts at
//   -((crop - n) // 2). Padding is 0 before normalisation, so it becomes
//   -mean / std. (Unreachable when resizeSize >= cropSize.)
// - ToTensor + Normalize: float32 (v / 255 - mean) / std, CHW.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "backend/data/image/image_codec.h"
#include "backend/data/image/pil_resample.h"
#include "backend/protocol/status.h"

namespace fs::data {

inline constexpr std::array<float, 3> kClipMean = {0.48145466f, 0.4578275f, 0.40821073f};
inline constexpr std::array<float, 3> kClipStd = {0.26862954f, 0.26130258f, 0.27577711f};

struct ClipPreprocessOptions {
  int resizeSize = 224;  // shorter side after resizing (open_clip: the image size)
  int cropSize = 224;    // square center crop (open_clip: the image size)
  std::array<float, 3> mean = kClipMean;
  std::array<float, 3> std = kClipStd;
};

// Longest resized side we accept (PIL would allocate >= 4 bytes x 2^24 x the
// shorter side for it); clipGeometry saturates at this value.
inline constexpr int kMaxResizedSide = 1 << 24;

// Where the crop window lies in the resized image (see NOTE above).
struct ClipGeometry {
  int resizedWidth = 0;
  int resizedHeight = 0;
  int cropLeft = 0;  // negative when the crop is zero-padded
  int cropTop = 0;
};

// REQUIRES: width, height, resizeSize, cropSize > 0.
ClipGeometry clipGeometry(int width, int height, int resizeSize, int cropSize);

// Holds the per-thread buffers, so that steady-state calls allocate nothing.
// Thread-safety: NOT thread-safe; use one instance per worker thread.
class ClipPreprocessor {
 public:
  explicit ClipPreprocessor(ClipPreprocessOptions options = {});

  const ClipPreprocessOptions& options() const { return options_; }
  // Tests compare the AVX2 kernels with the portable loops through this.
  void setScalarOnly(bool on) { scratch_.scalarOnly = on; }
  // Floats run() writes: 3 * cropSize * cropSize.
  std::size_t outputSize() const;

  // Writes the preprocessed image into `out` as CHW float32; with `flip`,
  // the result is mirrored left-right (torchvision's hflip after Normalize).
  // Errors: InvalidArgument (empty image, inconsistent pixel count, `out` of
  // the wrong size, a resized side of kMaxResizedSide or more); `out` is
  // untouched then.
  protocol::Status run(const RgbImage& image, bool flip, std::span<float> out);

 private:
  ClipPreprocessOptions options_;
  std::array<std::array<float, 256>, 3> lut_{};  // byte -> normalised value per channel
  RgbImage crop_;
  ResampleScratch scratch_;
};

// One-off convenience: a temporary ClipPreprocessor.
protocol::Status preprocessClip(const RgbImage& image, const ClipPreprocessOptions& options, bool flip,
                                std::span<float> out);

}  // namespace fs::data

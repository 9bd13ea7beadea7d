#include "backend/data/image/clip_preprocess.h"

#include <immintrin.h>

#include <cstdint>
#include <string>

#include "backend/data/image/cpu_features.h"

namespace fs::data {
namespace {

using protocol::Status;

// Python's int(round(d / 2.0)) for d >= 0: halves go to the even neighbour.
int halfRoundedEven(int d) {
  const int q = d / 2;
  if (d % 2 == 0) return q;
  return q % 2 == 0 ? q : q + 1;
}

int cropOffset(int n, int crop) {
  if (crop > n) return -((crop - n) / 2);
  return halfRoundedEven(n - crop);
}

// One row of interleaved RGB bytes to three planes of normalised floats.
void normaliseRow(const std::uint8_t* src, int n, const std::array<std::array<float, 256>, 3>& lut, bool flip,
                  float* r, float* g, float* b, int first = 0) {
  float* planes[3] = {r, g, b};
  for (int x = first; x < n; ++x) {
    const int xo = flip ? n - 1 - x : x;
    for (int c = 0; c < 3; ++c) planes[c][xo] = lut[c][src[3 * x + c]];
  }
}

// Eight pixels per step, computing what the table holds with the same
// float32 division, subtraction and division (IEEE, so the same bits; two
// divisions beat an 8-way gather from the table by 1.7x on Zen 4). A step
// reads 28 bytes, so it runs while that many remain in the buffer (`avail`
// bytes from src); the rest of the row goes through the table.
__attribute__((target("avx2"))) void normaliseRowAvx2(const std::uint8_t* src, int n, std::ptrdiff_t avail,
                                                      const std::array<std::array<float, 256>, 3>& lut,
                                                      const ClipPreprocessOptions& o, bool flip, float* r,
                                                      float* g, float* b) {
  // The low 128-bit lane holds bytes 0..15 (pixels 0..3 and more), the high
  // lane bytes 12..27 (pixels 4..7): each pick moves one channel's byte of
  // pixel j into int32 slot j.
  const __m256i pick[3] = {_mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1,  //
                                            0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1),
                           _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1,  //
                                            1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1),
                           _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1,  //
                                            2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1)};
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const __m256 v255 = _mm256_set1_ps(255.0f);
  float* planes[3] = {r, g, b};
  int x = 0;
  for (; x + 8 <= n && 3 * static_cast<std::ptrdiff_t>(x) + 28 <= avail; x += 8) {
    const std::uint8_t* p = src + 3 * x;
    const __m256i bytes =
        _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + 12), reinterpret_cast<const __m128i*>(p));
    for (int c = 0; c < 3; ++c) {
      const __m256 unit = _mm256_div_ps(_mm256_cvtepi32_ps(_mm256_shuffle_epi8(bytes, pick[c])), v255);
      const __m256 v =
          _mm256_div_ps(_mm256_sub_ps(unit, _mm256_set1_ps(o.mean[c])), _mm256_set1_ps(o.std[c]));
      if (flip) {
        _mm256_storeu_ps(planes[c] + (n - 8 - x), _mm256_permutevar8x32_ps(v, reverse));
      } else {
        _mm256_storeu_ps(planes[c] + x, v);
      }
    }
  }
  normaliseRow(src, n, lut, flip, r, g, b, x);
}

}  // namespace

ClipGeometry clipGeometry(int width, int height, int resizeSize, int cropSize) {
  ClipGeometry g{width, height, 0, 0};
  const bool wide = width > height;
  const int shortSide = wide ? height : width;
  const int longSide = wide ? width : height;
  if (shortSide != resizeSize) {
    // Python: int(size * long / short); the product is exact and the double
    // division is correctly rounded, as Python's int / int is.
    const double exact = static_cast<double>(static_cast<std::int64_t>(resizeSize) * longSide) / shortSide;
    const int newLong = exact >= kMaxResizedSide ? kMaxResizedSide : static_cast<int>(exact);
    g.resizedWidth = wide ? newLong : resizeSize;
    g.resizedHeight = wide ? resizeSize : newLong;
  }
  g.cropLeft = cropOffset(g.resizedWidth, cropSize);
  g.cropTop = cropOffset(g.resizedHeight, cropSize);
  return g;
}

ClipPreprocessor::ClipPreprocessor(ClipPreprocessOptions options) : options_(options) {
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      // The same float32 operations as ToTensor's div(255) then Normalize.
      const float unit = static_cast<float>(v) / 255.0f;
      lut_[c][v] = (unit - options_.mean[c]) / options_.std[c];
    }
  }
  if (options_.cropSize <= 0) return;  // run() reports it
  crop_.width = crop_.height = options_.cropSize;
  crop_.pixels.resize(static_cast<std::size_t>(options_.cropSize) * options_.cropSize * 3);
}

std::size_t ClipPreprocessor::outputSize() const {
  return static_cast<std::size_t>(3) * options_.cropSize * options_.cropSize;
}

Status ClipPreprocessor::run(const RgbImage& image, bool flip, std::span<float> out) {
  if (image.empty() || image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return Status::invalidArgument("clip preprocess: empty image or wrong pixel count");
  }
  if (out.size() != outputSize()) {
    return Status::invalidArgument("clip preprocess: output holds " + std::to_string(out.size()) +
                                   " floats, expected " + std::to_string(outputSize()));
  }
  if (options_.resizeSize <= 0 || options_.cropSize <= 0) {
    return Status::invalidArgument("clip preprocess: resizeSize and cropSize must be positive");
  }
  const ClipGeometry g = clipGeometry(image.width, image.height, options_.resizeSize, options_.cropSize);
  if (g.resizedWidth >= kMaxResizedSide || g.resizedHeight >= kMaxResizedSide) {
    // PIL would need gigabytes for the resized image and fail; so do we.
    return Status::invalidArgument("clip preprocess: " + std::to_string(image.width) + "x" +
                                   std::to_string(image.height) + " is too elongated to resize");
  }
  resizeBicubicWindow(image, g.resizedWidth, g.resizedHeight, g.cropLeft, g.cropTop, crop_, scratch_);

  const int n = options_.cropSize;
  const std::size_t plane = static_cast<std::size_t>(n) * n;
  const bool avx2 = !scratch_.scalarOnly && cpuHasAvx2();
  const std::uint8_t* end = crop_.pixels.data() + crop_.pixels.size();
  for (int y = 0; y < n; ++y) {
    const std::uint8_t* src = crop_.row(y);
    float* r = out.data() + static_cast<std::size_t>(y) * n;
    if (avx2) {
      normaliseRowAvx2(src, n, end - src, lut_, options_, flip, r, r + plane, r + 2 * plane);
    } else {
      normaliseRow(src, n, lut_, flip, r, r + plane, r + 2 * plane);
    }
  }
  return Status::ok();
}

Status preprocessClip(const RgbImage& image, const ClipPreprocessOptions& options, bool flip,
                      std::span<float> out) {
  ClipPreprocessor p(options);
  return p.run(image, flip, out);
}

}  // namespace fs::data

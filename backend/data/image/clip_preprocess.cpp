#include "backend/data/image/clip_preprocess.h"

#include <cstdint>
#include <string>

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
  for (int y = 0; y < n; ++y) {
    const std::uint8_t* src = crop_.row(y);
    float* r = out.data() + static_cast<std::size_t>(y) * n;
    float* gch = r + plane;
    float* b = gch + plane;
    if (flip) {
      for (int x = 0, xo = n - 1; x < n; ++x, --xo, src += 3) {
        r[xo] = lut_[0][src[0]];
        gch[xo] = lut_[1][src[1]];
        b[xo] = lut_[2][src[2]];
      }
    } else {
      for (int x = 0; x < n; ++x, src += 3) {
        r[x] = lut_[0][src[0]];
        gch[x] = lut_[1][src[1]];
        b[x] = lut_[2][src[2]];
      }
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

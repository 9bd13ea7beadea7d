// PIL's BICUBIC resize (Image.resize(size, Image.BICUBIC) on an RGB image),
// reimplemented to give the same bytes.
//
// NOTE [PIL bicubic resample]
// Facts from Pillow's libImaging/Resample.c (9.x), which we reproduce:
// - Separable: a horizontal pass into a temporary image (only the source rows
//   the vertical pass will read), then a vertical pass; a pass whose size does
//   not change is skipped. Each pass rounds and clips to uint8.
// - Cubic kernel with a = -0.5, support 2. When downscaling by s > 1 the
//   kernel is stretched by s (antialiasing): support 2s, argument multiplied by 1/s.
// - Output index i samples around center = (i + 0.5) * in/out; the taps are
//   [int(center - support + 0.5), int(center + support + 0.5)) clipped to the
//   image; weights are the kernel at (tap - center + 0.5) / s, divided by
//   their sum, in double precision.
// - Weights become fixed point with 22 fractional bits, rounded half away
//   from zero; sums start at 1 << 21 and the result is (sum >> 22) clipped to
//   0..255.
// Every output pixel depends only on its own taps, so computing a window of
// the resized image (the center crop) gives the same bytes as resizing the
// whole image and cropping, for less work.
//
// NOTE [AVX2 horizontal pass]
// Interleaved RGB defeats the auto-vectoriser in the horizontal pass (each
// output pixel has its own first tap), so on CPUs with AVX2 it is written by
// hand: one 256-bit multiply-add covers two taps x three channels, the two
// taps' pixels picked from one 16-byte load by a byte shuffle. The sums are
// the same 32-bit integers in another order, so the bytes are identical to
// the portable loop's (tests compare both on every kind of scale). A load
// reads up to 13 bytes past a row's last pixel; the image's last row(s)
// therefore take the portable loop.
//
// Thread-safety: functions are pure; a ResampleScratch belongs to one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/data/image/image_codec.h"

namespace fs::data {

// Buffers reused between calls so that steady-state resizing allocates
// nothing. Contents are meaningless between calls.
struct ResampleScratch {
  std::vector<int> hBounds, vBounds;           // per output index: first tap, tap count
  std::vector<std::int32_t> hCoeffs, vCoeffs;  // fixed-point weights, ksize per index
  std::vector<std::uint8_t> rows;              // horizontal pass output
  std::vector<const std::uint8_t*> rowPtrs;    // vertical pass input rows
  std::vector<std::int32_t> acc;               // vertical pass sums
  std::vector<double> weights;                 // one index's weights before fixed point
  std::vector<std::int32_t> hExpanded;         // hCoeffs laid out for the AVX2 pass
  // Tests set this to compare the AVX2 pass with the portable one.
  bool scalarOnly = false;
};

// Writes the window of `src` resized to outWidth x outHeight whose top-left
// corner is (x0, y0) in resized coordinates into `dst`, whose width/height
// give the window size. Window pixels outside the resized image are 0.
// REQUIRES: !src.empty(), outWidth > 0, outHeight > 0, !dst.empty() and
// dst.pixels.size() == dst.width * dst.height * 3.
void resizeBicubicWindow(const RgbImage& src, int outWidth, int outHeight, int x0, int y0, RgbImage& dst,
                         ResampleScratch& scratch);

// The whole resized image, as PIL's img.resize((w, h), Image.BICUBIC).
// REQUIRES: !src.empty(), outWidth > 0, outHeight > 0.
RgbImage resizeBicubic(const RgbImage& src, int outWidth, int outHeight);

}  // namespace fs::data

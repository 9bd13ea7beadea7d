// See NOTE [PIL bicubic resample] in pil_resample.h. This file is compiled
// with -ffp-contract=off: a fused multiply-add would change the double
// weights and so, now and then, a fixed-point coefficient.
#include "backend/data/image/pil_resample.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/data/image/cpu_features.h"

namespace fs::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);

double cubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

std::uint8_t clip8(std::int32_t sum) {
  return static_cast<std::uint8_t>(std::clamp(sum >> kPrecisionBits, 0, 255));
}

// Taps and fixed-point weights for output indices [lo, hi) of a resize from
// inSize to outSize; returns ksize (weights per index).
int computeCoeffs(int inSize, int outSize, int lo, int hi, std::vector<int>& bounds,
                  std::vector<std::int32_t>& coeffs, std::vector<double>& w) {
  // PIL takes the box edges as floats; for a whole image they are exact.
  const double scale = static_cast<double>(static_cast<float>(inSize)) / outSize;
  const double filterScale = std::max(scale, 1.0);
  const double support = 2.0 * filterScale;
  const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  const double invScale = 1.0 / filterScale;
  bounds.resize(static_cast<std::size_t>(hi - lo) * 2);
  coeffs.assign(static_cast<std::size_t>(hi - lo) * ksize, 0);
  w.resize(ksize);
  for (int xx = lo; xx < hi; ++xx) {
    const double center = (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), inSize);
    const int count = xmax - xmin;
    double sum = 0.0;
    for (int x = 0; x < count; ++x) {
      w[x] = cubic((x + xmin - center + 0.5) * invScale);
      sum += w[x];
    }
    std::int32_t* k = &coeffs[static_cast<std::size_t>(xx - lo) * ksize];
    for (int x = 0; x < count; ++x) {
      const double v = (sum != 0.0 ? w[x] / sum : w[x]) * (1 << kPrecisionBits);
      k[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + v : 0.5 + v);
    }
    bounds[(xx - lo) * 2] = xmin;
    bounds[(xx - lo) * 2 + 1] = count;
  }
  return ksize;
}

// Two source rows per call: they share every tap position and weight, which
// halves the bookkeeping per multiply-add. `src1`/`dst1` may repeat row 0.
// The hot loops are built twice (AVX2 and baseline x86-64) and picked at load
// time; integer sums make both bit-identical.
__attribute__((target_clones("avx2", "default"))) void horizontalRows(
    const std::uint8_t* src0, const std::uint8_t* src1, int count, const int* bounds,
    const std::int32_t* coeffs, int ksize, std::uint8_t* dst0, std::uint8_t* dst1) {
  for (int i = 0; i < count; ++i, dst0 += 3, dst1 += 3) {
    const int first = bounds[2 * i] * 3;
    const std::uint8_t* p = src0 + first;
    const std::uint8_t* q = src1 + first;
    const int taps = bounds[2 * i + 1];
    const std::int32_t* k = coeffs + static_cast<std::size_t>(i) * ksize;
    std::int32_t a0 = kHalf, a1 = kHalf, a2 = kHalf, b0 = kHalf, b1 = kHalf, b2 = kHalf;
    for (int t = 0; t < taps; ++t, p += 3, q += 3) {
      const std::int32_t kt = k[t];
      a0 += p[0] * kt;
      a1 += p[1] * kt;
      a2 += p[2] * kt;
      b0 += q[0] * kt;
      b1 += q[1] * kt;
      b2 += q[2] * kt;
    }
    dst0[0] = clip8(a0);
    dst0[1] = clip8(a1);
    dst0[2] = clip8(a2);
    dst1[0] = clip8(b0);
    dst1[1] = clip8(b1);
    dst1[2] = clip8(b2);
  }
}

// The AVX2 horizontal pass (NOTE [AVX2 horizontal pass] in pil_resample.h).
// Per output index: ceil(taps / 2) groups of 8 int32 weights, k[t] x 4 then
// k[t + 1] x 4, with zeros past the last tap.
void expandCoeffs(const std::int32_t* coeffs, const int* bounds, int count, int ksize,
                  std::vector<std::int32_t>& out, int& pairs) {
  pairs = (ksize + 1) / 2;
  out.assign(static_cast<std::size_t>(count) * pairs * 8, 0);
  for (int i = 0; i < count; ++i) {
    const std::int32_t* k = coeffs + static_cast<std::size_t>(i) * ksize;
    std::int32_t* e = &out[static_cast<std::size_t>(i) * pairs * 8];
    for (int t = 0; t < bounds[2 * i + 1]; ++t) std::fill_n(e + 4 * t, 4, k[t]);
  }
}

// The last byte a pair-of-taps load may touch, relative to the row start,
// is 3 * (width - 1) + 15: rows that end closer than that to the end of the
// image take the scalar loop.
constexpr int kAvx2Overread = 13;

__attribute__((target("avx2"))) void horizontalRowsAvx2(const std::uint8_t* src0, const std::uint8_t* src1,
                                                        int count, const int* bounds,
                                                        const std::int32_t* expanded, int pairs,
                                                        std::uint8_t* dst0, std::uint8_t* dst1) {
  // Both 128-bit lanes hold the same 16 source bytes; the low lane picks
  // pixel t's R, G, B into int32 slots 0..2, the high lane pixel t + 1's.
  const __m256i pick = _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, -1, -1, -1, -1,  //
                                        3, -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1, -1);
  const __m256i half = _mm256_setr_epi32(kHalf, kHalf, kHalf, 0, 0, 0, 0, 0);
  for (int i = 0; i < count; ++i, dst0 += 3, dst1 += 3) {
    const int first = bounds[2 * i] * 3;
    const std::uint8_t* p = src0 + first;
    const std::uint8_t* q = src1 + first;
    const int n = (bounds[2 * i + 1] + 1) / 2;
    const auto* k = reinterpret_cast<const __m256i*>(expanded + static_cast<std::size_t>(i) * pairs * 8);
    __m256i a = half, b = half;
    for (int j = 0; j < n; ++j, p += 6, q += 6) {
      const __m256i kj = _mm256_loadu_si256(k + j);
      const __m256i pp = _mm256_shuffle_epi8(
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), pick);
      const __m256i qq = _mm256_shuffle_epi8(
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))), pick);
      a = _mm256_add_epi32(a, _mm256_mullo_epi32(pp, kj));
      b = _mm256_add_epi32(b, _mm256_mullo_epi32(qq, kj));
    }
    // Even + odd taps, >> 22, then clamp to 0..255 by two saturating packs.
    __m128i sa = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    __m128i sb = _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    sa = _mm_srai_epi32(sa, kPrecisionBits);
    sb = _mm_srai_epi32(sb, kPrecisionBits);
    const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(sa, sb), _mm_setzero_si128());
    const std::uint64_t bytes = static_cast<std::uint64_t>(_mm_cvtsi128_si64(packed));
    std::memcpy(dst0, &bytes, 3);
    const std::uint32_t second = static_cast<std::uint32_t>(bytes >> 32);
    std::memcpy(dst1, &second, 3);
  }
}

__attribute__((target_clones("avx2", "default"))) void verticalRow(const std::uint8_t* const* rows, int taps,
                                                                   const std::int32_t* k, int n,
                                                                   std::int32_t* acc, std::uint8_t* out) {
  std::fill(acc, acc + n, kHalf);
  // Tap-major order keeps the inner loop contiguous (and vectorizable);
  // integer sums do not depend on the order.
  for (int t = 0; t < taps; ++t) {
    const std::uint8_t* row = rows[t];
    const std::int32_t kt = k[t];
    for (int x = 0; x < n; ++x) acc[x] += row[x] * kt;
  }
  for (int x = 0; x < n; ++x) out[x] = clip8(acc[x]);
}

// As verticalRow, 16 output bytes at a time with their sums kept in
// registers across the taps (the portable loop goes through `acc` in memory).
__attribute__((target("avx2"))) void verticalRowAvx2(const std::uint8_t* const* rows, int taps,
                                                     const std::int32_t* k, int n, std::uint8_t* out) {
  int x = 0;
  for (; x + 16 <= n; x += 16) {
    __m256i a0 = _mm256_set1_epi32(kHalf), a1 = a0;
    for (int t = 0; t < taps; ++t) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t] + x));
      const __m256i kt = _mm256_set1_epi32(k[t]);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(b), kt));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)), kt));
    }
    // packs works within 128-bit lanes: put the four 64-bit quarters back in order.
    const __m256i w = _mm256_permute4x64_epi64(
        _mm256_packs_epi32(_mm256_srai_epi32(a0, kPrecisionBits), _mm256_srai_epi32(a1, kPrecisionBits)),
        0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x),
                     _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  for (; x < n; ++x) {
    std::int32_t sum = kHalf;
    for (int t = 0; t < taps; ++t) sum += rows[t][x] * k[t];
    out[x] = clip8(sum);
  }
}

}  // namespace

void resizeBicubicWindow(const RgbImage& src, int outWidth, int outHeight, int x0, int y0, RgbImage& dst,
                         ResampleScratch& s) {
  // The part of the window that lies inside the resized image.
  const int xLo = std::max(x0, 0), xHi = std::min(x0 + dst.width, outWidth);
  const int yLo = std::max(y0, 0), yHi = std::min(y0 + dst.height, outHeight);
  if (xLo > x0 || yLo > y0 || xHi < x0 + dst.width || yHi < y0 + dst.height) {
    std::fill(dst.pixels.begin(), dst.pixels.end(), std::uint8_t{0});
  }
  if (xLo >= xHi || yLo >= yHi) return;
  const int validW = xHi - xLo;
  const std::size_t rowBytes = static_cast<std::size_t>(validW) * 3;
  const bool needH = outWidth != src.width;
  const bool needV = outHeight != src.height;

  // Source rows the vertical pass reads: [firstRow, lastRow).
  int firstRow = yLo, lastRow = yHi, vksize = 0;
  if (needV) {
    vksize = computeCoeffs(src.height, outHeight, yLo, yHi, s.vBounds, s.vCoeffs, s.weights);
    firstRow = s.vBounds[0];
    lastRow = s.vBounds[(yHi - yLo - 1) * 2] + s.vBounds[(yHi - yLo - 1) * 2 + 1];
  }
  const int nRows = lastRow - firstRow;
  s.rowPtrs.resize(nRows);
  if (needH) {
    const int hksize = computeCoeffs(src.width, outWidth, xLo, xHi, s.hBounds, s.hCoeffs, s.weights);
    const bool avx2 = !s.scalarOnly && cpuHasAvx2();
    int pairs = 0;
    if (avx2) expandCoeffs(s.hCoeffs.data(), s.hBounds.data(), validW, hksize, s.hExpanded, pairs);
    // Rows whose vector loads would run past the image's last byte.
    const std::uint8_t* end = src.pixels.data() + src.pixels.size();
    s.rows.resize(rowBytes * nRows);
    for (int r = 0; r < nRows; r += 2) {
      const int r1 = std::min(r + 1, nRows - 1);
      std::uint8_t* out0 = s.rows.data() + rowBytes * r;
      std::uint8_t* out1 = s.rows.data() + rowBytes * r1;
      const std::uint8_t* in0 = src.row(firstRow + r);
      const std::uint8_t* in1 = src.row(firstRow + r1);
      if (avx2 && end - in1 >= static_cast<std::ptrdiff_t>(src.width) * 3 + kAvx2Overread) {
        horizontalRowsAvx2(in0, in1, validW, s.hBounds.data(), s.hExpanded.data(), pairs, out0, out1);
      } else {
        horizontalRows(in0, in1, validW, s.hBounds.data(), s.hCoeffs.data(), hksize, out0, out1);
      }
      s.rowPtrs[r] = out0;
      s.rowPtrs[r1] = out1;
    }
  } else {
    for (int r = 0; r < nRows; ++r) s.rowPtrs[r] = src.row(firstRow + r) + static_cast<std::size_t>(xLo) * 3;
  }

  const int n = static_cast<int>(rowBytes);
  s.acc.resize(rowBytes);
  const bool vertical256 = !s.scalarOnly && cpuHasAvx2();
  for (int yy = yLo; yy < yHi; ++yy) {
    std::uint8_t* out = dst.row(yy - y0) + static_cast<std::size_t>(xLo - x0) * 3;
    if (!needV) {
      std::memcpy(out, s.rowPtrs[yy - firstRow], rowBytes);
      continue;
    }
    const int i = yy - yLo;
    const int ymin = s.vBounds[2 * i] - firstRow, taps = s.vBounds[2 * i + 1];
    const std::int32_t* k = s.vCoeffs.data() + static_cast<std::size_t>(i) * vksize;
    if (vertical256) {
      verticalRowAvx2(s.rowPtrs.data() + ymin, taps, k, n, out);
    } else {
      verticalRow(s.rowPtrs.data() + ymin, taps, k, n, s.acc.data(), out);
    }
  }
}

RgbImage resizeBicubic(const RgbImage& src, int outWidth, int outHeight) {
  RgbImage dst{outWidth, outHeight, {}};
  dst.pixels.resize(static_cast<std::size_t>(outWidth) * outHeight * 3);
  ResampleScratch scratch;
  resizeBicubicWindow(src, outWidth, outHeight, 0, 0, dst, scratch);
  return dst;
}

}  // namespace fs::data

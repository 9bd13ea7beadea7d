// decodeImage on bad input (clean errors, never a crash), the header reader,
// and encode/decode round trips within our own code. PIL parity lives in
// pil_parity_test.cpp.
#include "backend/data/image/image_codec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backend/data/image/image_header.h"

namespace fs::data {
namespace {

using Code = protocol::Status::Code;
using Bytes = std::vector<std::uint8_t>;

RgbImage gradient(int w, int h) {
  RgbImage img{w, h, Bytes(static_cast<std::size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      std::uint8_t* p = img.row(y) + x * 3;
      p[0] = static_cast<std::uint8_t>(x * 255 / std::max(w - 1, 1));
      p[1] = static_cast<std::uint8_t>(y * 255 / std::max(h - 1, 1));
      p[2] = static_cast<std::uint8_t>((x + y) * 255 / std::max(w + h - 2, 1));
    }
  }
  return img;
}

Bytes jpeg(int w = 64, int h = 48) {
  return encodeJpeg(gradient(w, h), 90).value();
}
Bytes png(int w = 64, int h = 48) {
  return encodePng(gradient(w, h)).value();
}

TEST(DecodeImage, EmptyBytesAreCorruption) {
  auto r = decodeImage({});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

TEST(DecodeImage, UnknownFormatIsUnsupported) {
  const std::string gif = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
  auto r = decodeImage({reinterpret_cast<const std::uint8_t*>(gif.data()), gif.size()});
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kUnsupported) << r.status().toString();
}

TEST(DecodeImage, RandomBytesAreRefused) {
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    Bytes b(rng() % 4096);
    for (auto& v : b) v = static_cast<std::uint8_t>(rng());
    // Also behind each magic, so the format-specific paths see garbage.
    if (i % 3 == 1 && b.size() >= 3) b[0] = 0xFF, b[1] = 0xD8, b[2] = 0xFF;
    if (i % 3 == 2 && b.size() >= 8) std::copy_n("\x89PNG\r\n\x1A\n", 8, b.begin());
    EXPECT_FALSE(decodeImage(b).isOk()) << "trial " << i;
  }
}

TEST(DecodeImage, TruncatedJpegIsCorruption) {
  const Bytes full = jpeg();
  ASSERT_TRUE(decodeImage(full).isOk());
  for (std::size_t cut = 0; cut < full.size(); cut += 1 + full.size() / 40) {
    auto r = decodeImage({full.data(), cut});
    EXPECT_FALSE(r.isOk()) << "cut at " << cut << " of " << full.size();
  }
  auto r = decodeImage({full.data(), full.size() - 2});  // only the EOI marker missing
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  // A real truncated photograph shipped with scikit-image.
  std::ifstream in("/usr/lib/python3/dist-packages/skimage/data/truncated.jpg", std::ios::binary);
  const Bytes skimage{std::istreambuf_iterator<char>(in), {}};
  if (!skimage.empty()) {
    EXPECT_FALSE(decodeImage(skimage).isOk());
  }
}

TEST(DecodeImage, TruncatedPngIsCorruption) {
  const Bytes full = png();
  ASSERT_TRUE(decodeImage(full).isOk());
  // Up to the end of the image data; the 12-byte IEND chunk is checked apart.
  for (std::size_t cut = 0; cut < full.size() - 12; cut += 1 + full.size() / 40) {
    EXPECT_FALSE(decodeImage({full.data(), cut}).isOk()) << "cut at " << cut << " of " << full.size();
  }
}

TEST(DecodeImage, DamagedBytesNeverCrash) {
  std::mt19937 rng(11);
  for (const Bytes& good : {jpeg(), png()}) {
    for (int i = 0; i < 100; ++i) {
      Bytes b = good;
      for (int k = 0; k < 4; ++k) b[20 + rng() % (b.size() - 20)] = static_cast<std::uint8_t>(rng());
      auto r = decodeImage(b);  // either outcome is fine; a crash is not
      if (r.isOk()) {
        EXPECT_EQ(r->pixels.size(), static_cast<std::size_t>(r->width) * r->height * 3);
      }
    }
  }
}

TEST(DecodeImage, PngBombIsRefusedFromTheHeader) {
  Bytes b = png();
  b[16] = 0, b[17] = 1, b[18] = 0x86, b[19] = 0xA0;  // width 100000
  b[20] = 0, b[21] = 1, b[22] = 0x86, b[23] = 0xA0;  // height 100000
  auto size = decodeImageSize(b);
  ASSERT_TRUE(size.isOk());
  EXPECT_EQ(size->width, 100000);
  auto r = decodeImage(b);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
}

TEST(DecodeImage, JpegBombIsRefusedFromTheHeader) {
  Bytes b = jpeg();
  auto h = decodeImageHeader(b);
  ASSERT_TRUE(h.isOk());
  // Find the SOF0 segment and claim 60000 x 60000.
  std::size_t sof = 0;
  for (std::size_t i = 2; i + 1 < h->jpegScanOffset; ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xC0) sof = i;
  }
  ASSERT_NE(sof, 0u);
  b[sof + 5] = 0xEA, b[sof + 6] = 0x60, b[sof + 7] = 0xEA, b[sof + 8] = 0x60;
  auto r = decodeImage(b);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
}

TEST(DecodeImage, PixelLimitIsAnOption) {
  const Bytes b = png(64, 48);
  EXPECT_TRUE(decodeImage(b, {.maxPixels = 64 * 48}).isOk());
  EXPECT_FALSE(decodeImage(b, {.maxPixels = 64 * 48 - 1}).isOk());
}

TEST(DecodeImage, IntoReusesStorageAndMatchesDecodeImage) {
  RgbImage reused;
  for (const Bytes& b : {png(64, 48), jpeg(17, 5), png(3, 90)}) {
    ASSERT_TRUE(decodeImageInto(b, reused).isOk());
    auto fresh = decodeImage(b);
    ASSERT_TRUE(fresh.isOk());
    EXPECT_EQ(reused.width, fresh->width);
    EXPECT_EQ(reused.height, fresh->height);
    EXPECT_EQ(reused.pixels, fresh->pixels);
  }
  EXPECT_FALSE(decodeImageInto(Bytes{1, 2, 3}, reused).isOk());
  EXPECT_TRUE(reused.empty());
}

TEST(DecodeImageSize, ReadsJpegAndPngHeaders) {
  for (auto [w, h] : {std::pair{1, 1}, {1, 9}, {17, 3}, {640, 427}}) {
    for (const Bytes& b : {jpeg(w, h), png(w, h)}) {
      auto size = decodeImageSize(b);
      ASSERT_TRUE(size.isOk()) << size.status().toString();
      EXPECT_EQ(size->width, w);
      EXPECT_EQ(size->height, h);
    }
  }
  EXPECT_FALSE(decodeImageSize(Bytes{0xFF, 0xD8, 0xFF}).isOk());
  EXPECT_FALSE(decodeImageSize(Bytes{0x89, 'P', 'N', 'G'}).isOk());
}

TEST(Encode, PngRoundTripIsLossless) {
  const RgbImage src = gradient(33, 17);
  auto back = decodeImage(encodePng(src).value());
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->width, 33);
  EXPECT_EQ(back->height, 17);
  EXPECT_EQ(back->pixels, src.pixels);
}

TEST(Encode, JpegQualityShowsInSizeAndError) {
  const RgbImage src = gradient(96, 64);
  const Bytes hi = encodeJpeg(src, 95).value(), lo = encodeJpeg(src, 20).value();
  EXPECT_LT(lo.size(), hi.size());
  auto back = decodeImage(hi);
  ASSERT_TRUE(back.isOk());
  int maxDiff = 0;
  for (std::size_t i = 0; i < src.pixels.size(); ++i)
    maxDiff = std::max(maxDiff, std::abs(back->pixels[i] - src.pixels[i]));
  EXPECT_LE(maxDiff, 12);  // a smooth image; a swapped colour order would be far off
}

TEST(Encode, BadArgumentsAreErrors) {
  EXPECT_FALSE(encodePng(RgbImage{}).isOk());
  EXPECT_FALSE(encodeJpeg(gradient(4, 4), 0).isOk());
  RgbImage wrong = gradient(4, 4);
  wrong.pixels.pop_back();
  EXPECT_FALSE(encodeJpeg(wrong, 90).isOk());
}

}  // namespace
}  // namespace fs::data

// ClipPreprocessor properties that need no oracle: flip, argument checks,
// reuse and thread-safety. PIL parity lives in pil_parity_test.cpp.
#include "backend/data/image/clip_preprocess.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include "backend/data/image/cpu_features.h"
#include "backend/data/image/image_codec.h"
#include "backend/data/image/pil_resample.h"

namespace fs::data {
namespace {

RgbImage photo(const char* name) {
  std::ifstream in(std::string("/usr/lib/python3/dist-packages/skimage/data/") + name, std::ios::binary);
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  auto img = decodeImage(bytes);
  EXPECT_TRUE(img.isOk()) << name << ": " << img.status().toString();
  return img.isOk() ? std::move(img).value() : RgbImage{};
}

std::vector<float> run(ClipPreprocessor& p, const RgbImage& img, bool flip) {
  std::vector<float> out(p.outputSize());
  EXPECT_TRUE(p.run(img, flip, out).isOk());
  return out;
}

// Noise holds every byte value next to every other, so bicubic overshoot
// drives sums past 0 and 255 and the clamps are exercised.
RgbImage noise(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  RgbImage img{w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h * 3)};
  for (auto& v : img.pixels) v = static_cast<std::uint8_t>(rng() % 4 == 0 ? (rng() % 2) * 255 : rng() % 256);
  return img;
}

// The hand-written AVX2 kernels (NOTE [AVX2 horizontal pass]) against the
// portable loops, bit for bit: upscales, downscales up to 40x, one-pixel
// sides, zero-padded crops, both flips.
TEST(ClipPreprocess, Avx2KernelsMatchThePortableLoops) {
  if (!cpuHasAvx2()) GTEST_SKIP() << "this CPU has no AVX2: only the portable loops run";
  const std::vector<std::pair<int, int>> sizes = {
      {448, 336}, {336, 448}, {224, 224}, {225, 224},  {640, 427}, {1, 1},      {2, 300},
      {300, 2},   {5, 7},     {100, 1},   {9000, 230}, {97, 61},   {2048, 1536}};
  const std::vector<std::pair<int, int>> options = {{224, 224}, {32, 32}, {16, 32}, {31, 31}, {300, 299}};
  unsigned seed = 1;
  for (const auto& [w, h] : sizes) {
    const RgbImage img = noise(w, h, seed++);
    for (const auto& [resize, crop] : options) {
      ClipPreprocessor fast({resize, crop}), portable({resize, crop});
      portable.setScalarOnly(true);
      for (const bool flip : {false, true}) {
        const auto a = run(fast, img, flip), b = run(portable, img, flip);
        ASSERT_TRUE(a == b) << w << "x" << h << " resize " << resize << " crop " << crop << " flip " << flip;
      }
    }
    // The whole resized image too (no crop window), both ways of scaling.
    for (const auto& [ow, oh] : {std::pair{w * 2 + 1, h + 3}, {std::max(1, w / 3), std::max(1, h / 2)}}) {
      RgbImage fast{ow, oh, std::vector<std::uint8_t>(static_cast<std::size_t>(ow) * oh * 3)},
          portable = fast;
      ResampleScratch fs, ps;
      ps.scalarOnly = true;
      resizeBicubicWindow(img, ow, oh, 0, 0, fast, fs);
      resizeBicubicWindow(img, ow, oh, 0, 0, portable, ps);
      ASSERT_TRUE(fast.pixels == portable.pixels) << w << "x" << h << " -> " << ow << "x" << oh;
    }
  }
}

TEST(ClipPreprocess, FlipMirrorsEveryRow) {
  const RgbImage img = photo("chelsea.png");
  for (int size : {224, 32}) {
    ClipPreprocessor p({size, size});
    const auto plain = run(p, img, false), flipped = run(p, img, true);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < size; ++y) {
        for (int x = 0; x < size; ++x) {
          const std::size_t row = (static_cast<std::size_t>(c) * size + y) * size;
          ASSERT_EQ(flipped[row + x], plain[row + size - 1 - x]) << c << " " << y << " " << x;
        }
      }
    }
  }
}

TEST(ClipPreprocess, ReuseGivesTheSameResultAsAFreshInstance) {
  const RgbImage a = photo("coffee.png"), b = photo("rocket.jpg");
  ClipPreprocessor reused;
  run(reused, a, false);
  const auto second = run(reused, b, false);
  std::vector<float> fresh(reused.outputSize());
  ASSERT_TRUE(preprocessClip(b, {}, false, fresh).isOk());
  EXPECT_EQ(second, fresh);
}

TEST(ClipPreprocess, WindowEqualsCroppedFullResize) {
  const RgbImage img = photo("motorcycle_left.png");
  const ClipGeometry g = clipGeometry(img.width, img.height, 224, 224);
  const RgbImage full = resizeBicubic(img, g.resizedWidth, g.resizedHeight);
  RgbImage window{224, 224, std::vector<std::uint8_t>(224 * 224 * 3)};
  ResampleScratch scratch;
  resizeBicubicWindow(img, g.resizedWidth, g.resizedHeight, g.cropLeft, g.cropTop, window, scratch);
  for (int y = 0; y < 224; ++y) {
    const std::uint8_t* f = full.row(y + g.cropTop) + g.cropLeft * 3;
    ASSERT_TRUE(std::equal(f, f + 224 * 3, window.row(y))) << "row " << y;
  }
}

TEST(ClipPreprocess, BadArgumentsAreErrors) {
  ClipPreprocessor p;
  std::vector<float> out(p.outputSize());
  EXPECT_FALSE(p.run(RgbImage{}, false, out).isOk());
  RgbImage img{2, 2, std::vector<std::uint8_t>(11)};
  EXPECT_FALSE(p.run(img, false, out).isOk());
  img.pixels.resize(12);
  std::vector<float> small(out.size() - 1);
  EXPECT_FALSE(p.run(img, false, small).isOk());
  // 1 x 100000 would resize to 224 x 22.4M: refused like PIL's MemoryError.
  RgbImage needle{1, 100000, std::vector<std::uint8_t>(300000)};
  EXPECT_FALSE(p.run(needle, false, out).isOk());
  ClipPreprocessor zero({0, 0});
  std::vector<float> none;
  EXPECT_FALSE(zero.run(img, false, none).isOk());
}

TEST(ClipPreprocess, ThreadsGetTheSameBytesAsOneThread) {
  const std::vector<RgbImage> images = {photo("astronaut.png"), photo("rocket.jpg"), photo("camera.png"),
                                        photo("hubble_deep_field.jpg")};
  std::vector<std::vector<float>> expected;
  ClipPreprocessor one;
  for (const auto& img : images) expected.push_back(run(one, img, false));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ClipPreprocessor mine;
      std::vector<float> out(mine.outputSize());
      for (int i = 0; i < 20; ++i) {
        const std::size_t k = static_cast<std::size_t>(i + t) % images.size();
        if (!mine.run(images[k], false, out).isOk() || out != expected[k]) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace fs::data

// decodeImage, encodeJpeg/encodePng and ClipPreprocessor against PIL and
// open_clip's own transform (what OpenFlamingo uses), via one run of
// pil_reference.py for all images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backend/data/image/clip_preprocess.h"
#include "backend/data/image/image_codec.h"

namespace fs::data {
namespace {

namespace stdfs = std::filesystem;
const char* kSkimageData = "/usr/lib/python3/dist-packages/skimage/data";

std::vector<std::uint8_t> readFile(const stdfs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void writeFile(const stdfs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<float> readFloats(const stdfs::path& p) {
  const auto bytes = readFile(p);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

struct Reference {
  std::string name, path;
  bool error = false;
  int width = 0, height = 0;
};

class PilParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = new stdfs::path(stdfs::path(FS_BINARY_DIR) / "tests" / "image_pil_parity");
    stdfs::remove_all(*work_);
    stdfs::create_directories(*work_ / "inputs");
    // Our encodings go in first so that PIL decodes them in the same run.
    auto astro = decodeImage(readFile(stdfs::path(kSkimageData) / "astronaut.png"));
    ASSERT_TRUE(astro.isOk()) << astro.status().toString();
    ourSource_ = new RgbImage(std::move(astro).value());
    writeFile(*work_ / "inputs" / "ours_q90.jpg", encodeJpeg(*ourSource_, 90).value());
    writeFile(*work_ / "inputs" / "ours_q40.jpg", encodeJpeg(*ourSource_, 40).value());
    writeFile(*work_ / "inputs" / "ours.png", encodePng(*ourSource_).value());
    const std::string cmd = std::string(FS_PYTHON) + " -W ignore " + FS_SOURCE_DIR +
                            "/tests/backend/data/image/pil_reference.py " + kSkimageData + " " +
                            work_->string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    refs_ = new std::vector<Reference>;
    std::ifstream manifest(*work_ / "manifest.txt");
    for (std::string line; std::getline(manifest, line);) {
      std::istringstream fields(line);
      Reference r;
      std::string w;
      fields >> r.name >> r.path >> w;
      r.error = w == "ERROR";
      if (!r.error) {
        r.width = std::stoi(w);
        fields >> r.height;
      }
      refs_->push_back(r);
    }
  }
  static void TearDownTestSuite() {
    stdfs::remove_all(*work_);
    delete work_;
    delete refs_;
    delete ourSource_;
  }

  static RgbImage pilRgb(const Reference& r) {
    return RgbImage{r.width, r.height, readFile(*work_ / (r.name + ".rgb"))};
  }

  static stdfs::path* work_;
  static std::vector<Reference>* refs_;
  static RgbImage* ourSource_;
};
stdfs::path* PilParity::work_ = nullptr;
std::vector<Reference>* PilParity::refs_ = nullptr;
RgbImage* PilParity::ourSource_ = nullptr;

int maxAbsDiff(const RgbImage& a, const RgbImage& b) {
  int m = 0;
  for (std::size_t i = 0; i < a.pixels.size(); ++i) m = std::max(m, std::abs(a.pixels[i] - b.pixels[i]));
  return m;
}

// max over pixels of |ours - pil| * std, i.e. the difference in 0..1 units.
double maxUnitDiff(const std::vector<float>& ours, const std::vector<float>& pil, int crop) {
  double m = 0;
  const std::size_t plane = static_cast<std::size_t>(crop) * crop;
  for (std::size_t i = 0; i < ours.size(); ++i)
    m = std::max(m, static_cast<double>(std::fabs(ours[i] - pil[i])) * kClipStd[i / plane]);
  return m;
}

TEST_F(PilParity, ManifestCoversEveryInput) {
  ASSERT_GE(refs_->size(), 45u);
  for (const auto& r : *refs_) EXPECT_FALSE(r.error) << r.name << ": PIL could not read it";
}

// PNG, BMP, lossless WebP must be bit-exact; JPEG/lossy WebP decode with the
// same libjpeg-turbo / libwebp, so equal or within a level; CMYK differs by
// OpenCV's conversion formula (NOTE [PIL parity of decodeImage]).
TEST_F(PilParity, DecodeMatchesPilConvertRgb) {
  for (const auto& r : *refs_) {
    if (r.error) continue;
    auto ours = decodeImage(readFile(r.path));
    ASSERT_TRUE(ours.isOk()) << r.name << ": " << ours.status().toString();
    ASSERT_EQ(ours->width, r.width) << r.name;
    ASSERT_EQ(ours->height, r.height) << r.name;
    const int diff = maxAbsDiff(ours.value(), pilRgb(r));
    std::printf("decode  %-32s %4dx%-5d max |ours - PIL| = %d\n", r.name.c_str(), r.width, r.height, diff);
    const bool cmyk = r.name.find("cmyk") != std::string::npos;
    const bool lossy = r.name.ends_with(".jpg") || r.name == "astronaut.webp";
    EXPECT_LE(diff, cmyk ? 3 : lossy ? 1 : 0) << r.name;
  }
}

// Our resize + crop + normalise on PIL's own RGB pixels: expected bit-exact.
TEST_F(PilParity, PreprocessOfPilPixelsIsExact) {
  for (const auto& [resize, crop] : {std::pair{224, 224}, {32, 32}, {16, 32}}) {
    ClipPreprocessor p({resize, crop});
    std::vector<float> out(p.outputSize());
    for (const auto& r : *refs_) {
      if (r.error) continue;
      ASSERT_TRUE(p.run(pilRgb(r), false, out).isOk());
      const auto pil =
          readFloats(*work_ / (r.name + "." + std::to_string(resize) + "_" + std::to_string(crop) + ".f32"));
      ASSERT_EQ(pil.size(), out.size()) << r.name;
      const double diff = maxUnitDiff(out, pil, crop);
      if (diff > 0)
        std::printf("resize %d crop %d %-32s max diff %.3g (x255 = %.3f)\n", resize, crop, r.name.c_str(),
                    diff, diff * 255);
      EXPECT_LE(diff, 1e-6) << r.name << " resize " << resize << " crop " << crop;
    }
  }
}

// The pipeline as it runs: our decode + our preprocess vs PIL end to end.
TEST_F(PilParity, DecodeAndPreprocessWithinTwoLevels) {
  for (const auto& [resize, crop] : {std::pair{224, 224}, {32, 32}}) {
    ClipPreprocessor p({resize, crop});
    std::vector<float> out(p.outputSize());
    for (const auto& r : *refs_) {
      if (r.error) continue;
      auto img = decodeImage(readFile(r.path));
      ASSERT_TRUE(img.isOk()) << r.name;
      ASSERT_TRUE(p.run(img.value(), false, out).isOk());
      const auto pil =
          readFloats(*work_ / (r.name + "." + std::to_string(resize) + "_" + std::to_string(crop) + ".f32"));
      const double diff = maxUnitDiff(out, pil, crop);
      std::printf("e2e %3d %-32s max |diff| * std * 255 = %.3f\n", resize, r.name.c_str(), diff * 255);
      EXPECT_LE(diff, 2.0 / 255 + 1e-6) << r.name << " size " << resize;
    }
  }
}

// encodePng is lossless through PIL; PIL decodes our JPEGs exactly as we do.
TEST_F(PilParity, EncodeRoundTripThroughPil) {
  for (const auto& r : *refs_) {
    if (!r.name.starts_with("ours")) continue;
    ASSERT_FALSE(r.error) << r.name;
    const RgbImage pil = pilRgb(r);
    ASSERT_EQ(pil.width, ourSource_->width);
    ASSERT_EQ(pil.height, ourSource_->height);
    if (r.name.ends_with(".png")) {
      EXPECT_EQ(maxAbsDiff(pil, *ourSource_), 0) << r.name;
    } else {
      auto ours = decodeImage(readFile(r.path));
      ASSERT_TRUE(ours.isOk());
      EXPECT_LE(maxAbsDiff(pil, ours.value()), 1) << r.name;
      double se = 0;
      for (std::size_t i = 0; i < pil.pixels.size(); ++i) {
        const double d = pil.pixels[i] - ourSource_->pixels[i];
        se += d * d;
      }
      const double psnr = 10 * std::log10(255.0 * 255.0 / (se / pil.pixels.size()));
      std::printf("%s PSNR vs source %.1f dB\n", r.name.c_str(), psnr);
      EXPECT_GT(psnr, 28.0) << r.name;
    }
  }
}

}  // namespace
}  // namespace fs::data

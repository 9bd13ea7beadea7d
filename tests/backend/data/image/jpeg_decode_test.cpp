// decodeJpegRgb against OpenCV's imdecode (the decoder it replaces, built on
// the same libjpeg-turbo): byte-equal on real photographs and our encodings;
// on damaged scans, decodeImage against PIL (verdict and pixels).
#include "backend/data/image/jpeg_decode.h"

#include <gtest/gtest.h>
#include <jpeglib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string>
#include <vector>

#include "backend/data/image/image_codec.h"

namespace fs::data {
namespace {

using Code = protocol::Status::Code;
using Bytes = std::vector<std::uint8_t>;
constexpr std::int64_t kNoLimit = INT64_MAX;

Bytes readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The photographs scikit-image ships (real camera JPEGs, one progressive).
std::vector<Bytes> skimageJpegs() {
  std::vector<Bytes> out;
  for (const char* name : {"rocket.jpg", "retina.jpg", "hubble_deep_field.jpg"}) {
    const auto p = std::filesystem::path("/usr/lib/python3/dist-packages/skimage/data") / name;
    if (std::filesystem::exists(p)) out.push_back(readFile(p));
  }
  return out;
}

RgbImage noisyPicture(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  RgbImage img{w, h, Bytes(static_cast<std::size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w * 3; ++x)
      img.row(y)[x] = static_cast<std::uint8_t>((x * 7 + y * 3) % 256 ^ (rng() % 32));
  }
  return img;
}

Bytes grayJpeg(int w, int h) {
  cv::Mat gray(h, w, CV_8UC1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x)
      gray.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>((x * x + y * 5) % 256);
  }
  Bytes out;
  EXPECT_TRUE(cv::imencode(".jpg", gray, out, {cv::IMWRITE_JPEG_QUALITY, 80}));
  return out;
}

// libjpeg's own encoder writing a 4-component (CMYK) JPEG.
Bytes cmykJpeg(int w, int h) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_start_compress(&c, TRUE);
  Bytes row(static_cast<std::size_t>(w) * 4);
  for (int y = 0; y < h; ++y) {
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<std::uint8_t>(i * 3 + y);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes out(buf, buf + size);
  free(buf);
  return out;
}

// OpenCV's verdict: the RGB image, or empty when it refuses the bytes.
RgbImage openCvRgb(const Bytes& bytes) {
  const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<std::uint8_t*>(bytes.data()));
  cv::Mat bgr;
  try {
    bgr = cv::imdecode(buf, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception&) {
    return {};
  }
  if (bgr.empty()) return {};
  RgbImage out{bgr.cols, bgr.rows, Bytes(static_cast<std::size_t>(bgr.cols) * bgr.rows * 3)};
  for (int y = 0; y < bgr.rows; ++y) {
    const std::uint8_t* s = bgr.ptr<std::uint8_t>(y);
    for (int x = 0; x < bgr.cols * 3; x += 3) {
      out.row(y)[x] = s[x + 2], out.row(y)[x + 1] = s[x + 1], out.row(y)[x + 2] = s[x];
    }
  }
  return out;
}

void expectSameAsOpenCv(const Bytes& bytes, const std::string& what) {
  RgbImage ours;
  const auto s = decodeJpegRgb(bytes, ours, kNoLimit);
  const RgbImage cv = openCvRgb(bytes);
  ASSERT_EQ(s.isOk(), !cv.empty()) << what << ": " << s.toString();
  if (!s.isOk()) {
    EXPECT_EQ(s.code(), Code::kCorruption) << what;
    EXPECT_TRUE(ours.empty()) << what;
    return;
  }
  ASSERT_EQ(ours.width, cv.width) << what;
  ASSERT_EQ(ours.height, cv.height) << what;
  EXPECT_TRUE(ours.pixels == cv.pixels) << what << ": pixels differ from OpenCV's";
}

}  // namespace

TEST(DecodeJpegRgb, PhotographsMatchOpenCvByteForByte) {
  const auto photos = skimageJpegs();
  ASSERT_GE(photos.size(), 3u) << "python3-skimage's photographs are missing";
  for (std::size_t i = 0; i < photos.size(); ++i) expectSameAsOpenCv(photos[i], "photo " + std::to_string(i));
}

TEST(DecodeJpegRgb, OurEncodingsAndGrayMatchOpenCv) {
  for (const int q : {20, 75, 95}) {
    for (const auto& [w, h] : {std::pair{448, 336}, {17, 9}, {1, 1}, {33, 200}}) {
      const Bytes b = encodeJpeg(noisyPicture(w, h, static_cast<unsigned>(q + w)), q).value();
      expectSameAsOpenCv(b, "q" + std::to_string(q) + " " + std::to_string(w) + "x" + std::to_string(h));
    }
  }
  const Bytes gray = grayJpeg(61, 40);
  expectSameAsOpenCv(gray, "gray");
  RgbImage img;
  ASSERT_TRUE(decodeJpegRgb(gray, img, kNoLimit).isOk());
  for (std::size_t p = 0; p < img.pixels.size(); p += 3) {
    ASSERT_EQ(img.pixels[p], img.pixels[p + 1]);
    ASSERT_EQ(img.pixels[p], img.pixels[p + 2]);
  }
}

// Damaged entropy data: libjpeg warns and goes on, or gives up. PIL is the
// oracle here, not OpenCV: OpenCV 4.6 keeps an image whose error comes only
// in jpeg_finish_decompress (a bad marker after the last scan), which PIL
// refuses as a "broken data stream" and so do we.
TEST(DecodeJpegRgb, DamagedScansGivePilsVerdict) {
  namespace stdfs = std::filesystem;
  const stdfs::path dir = stdfs::path(FS_BINARY_DIR) / "tests" / "jpeg_decode_damaged";
  stdfs::remove_all(dir);
  stdfs::create_directories(dir);
  std::mt19937 rng(5);
  const Bytes good = encodeJpeg(noisyPicture(96, 64, 3), 85).value();
  constexpr int kCases = 200;
  std::vector<Bytes> damaged;
  for (int i = 0; i < kCases; ++i) {
    Bytes b = good;
    const int hits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < hits; ++k) b[2 + rng() % (b.size() - 2)] = static_cast<std::uint8_t>(rng());
    std::ofstream(dir / (std::to_string(i) + ".jpg"), std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    damaged.push_back(std::move(b));
  }
  const std::string cmd = std::string(FS_PYTHON) + " -W ignore " + FS_SOURCE_DIR +
                          "/tests/backend/data/image/pil_decode_verdicts.py " + dir.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  int refused = 0, openCvKept = 0;
  for (int i = 0; i < kCases; ++i) {
    const stdfs::path stem = dir / std::to_string(i);
    auto ours = decodeImage(damaged[i]);
    const bool pilRefused = stdfs::exists(stem.string() + ".err");
    ASSERT_EQ(ours.isOk(), !pilRefused) << "case " << i << ": " << ours.status().toString();
    if (pilRefused) {
      ++refused;
      openCvKept += openCvRgb(damaged[i]).empty() ? 0 : 1;
      continue;
    }
    int w = 0, h = 0;
    std::ifstream(stem.string() + ".size") >> w >> h;
    ASSERT_EQ(ours->width, w) << "case " << i;
    ASSERT_EQ(ours->height, h) << "case " << i;
    EXPECT_TRUE(ours->pixels == readFile(stem.string() + ".rgb"))
        << "case " << i << ": pixels differ from PIL's";
  }
  std::printf("%d of %d damaged JPEGs refused (as PIL does); OpenCV would have kept %d of those\n", refused,
              kCases, openCvKept);
  EXPECT_GT(refused, 0);  // both outcomes were exercised
  EXPECT_LT(refused, kCases);
  stdfs::remove_all(dir);
}

TEST(DecodeJpegRgb, ErrorsNameTheProblem) {
  RgbImage img;
  const Bytes notJpeg{'G', 'I', 'F', '8', '9', 'a', 0, 0};
  auto s = decodeJpegRgb(notJpeg, img, kNoLimit);
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_NE(s.message().find("JPEG"), std::string::npos) << s.message();

  s = decodeJpegRgb(cmykJpeg(8, 8), img, kNoLimit);
  EXPECT_EQ(s.code(), Code::kUnsupported) << s.toString();
  EXPECT_TRUE(img.empty());

  const Bytes b = encodeJpeg(noisyPicture(40, 30, 1), 90).value();
  s = decodeJpegRgb(b, img, 40 * 30 - 1);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.toString();
  EXPECT_TRUE(img.empty());
  EXPECT_TRUE(decodeJpegRgb(b, img, 40 * 30).isOk());
}

// decodeImage still takes CMYK through OpenCV.
TEST(DecodeJpegRgb, DecodeImageStillReadsCmyk) {
  auto r = decodeImage(cmykJpeg(12, 10));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->width, 12);
  EXPECT_EQ(r->height, 10);
}

TEST(DecodeJpegRgb, ReusesTheImageAcrossSizes) {
  RgbImage img;
  for (const auto& [w, h] : {std::pair{64, 48}, {8, 8}, {100, 3}}) {
    const Bytes b = encodeJpeg(noisyPicture(w, h, 9), 90).value();
    ASSERT_TRUE(decodeJpegRgb(b, img, kNoLimit).isOk());
    EXPECT_EQ(img.width, w);
    EXPECT_EQ(img.height, h);
    EXPECT_EQ(img.pixels.size(), static_cast<std::size_t>(w) * h * 3);
    EXPECT_TRUE(img.pixels == openCvRgb(b).pixels);
  }
}

}  // namespace fs::data

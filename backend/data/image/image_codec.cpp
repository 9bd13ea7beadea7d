#include "backend/data/image/image_codec.h"

#include <algorithm>
#include <exception>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <utility>

#include "backend/data/image/jpeg_decode.h"

namespace fs::data {
namespace {

using protocol::Status;

// PIL refuses a JPEG whose data ends before libjpeg has read the EOI marker
// ("image file is truncated"); libjpeg itself warns and pads with gray. Inside
// entropy-coded data 0xFF is always followed by 0x00 or a restart marker, so
// an FF D9 after the first scan header can only be the real EOI.
bool jpegHasEndMarker(std::span<const std::uint8_t> b, std::size_t scanOffset) {
  if (b.size() < 2) return false;
  for (std::size_t i = b.size() - 2; i + 1 > scanOffset; --i) {
    if (b[i] == 0xFF && b[i + 1] == 0xD9) return true;
    if (i == 0) break;
  }
  return false;
}

void swapRedBlue(std::uint8_t* p, std::size_t pixels) {
  for (std::size_t i = 0; i < pixels; ++i, p += 3) std::swap(p[0], p[2]);
}

void resizeImage(RgbImage& out, int width, int height) {
  out.width = width;
  out.height = height;
  out.pixels.resize(static_cast<std::size_t>(width) * height * 3);
}

// PIL opens 16-bit gray PNGs as mode "I"; its RGB conversion clamps each
// value to 255 instead of taking the high byte.
void grayClampedToRgb(const cv::Mat& gray16, RgbImage& out) {
  resizeImage(out, gray16.cols, gray16.rows);
  for (int y = 0; y < out.height; ++y) {
    const auto* src = gray16.ptr<std::uint16_t>(y);
    std::uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x, dst += 3) {
      dst[0] = dst[1] = dst[2] = static_cast<std::uint8_t>(std::min<std::uint16_t>(src[x], 255));
    }
  }
}

Status decodeChecked(std::span<const std::uint8_t> bytes, const ImageHeader& h, const DecodeOptions& options,
                     RgbImage& out) {
  const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<std::uint8_t*>(bytes.data()));
  const std::string what = formatName(h.format);
  if (h.format == ImageFormat::kPng && h.pngColorType == 0 && h.bitDepth == 16) {
    cv::Mat gray =
        cv::imdecode(buf, cv::IMREAD_ANYDEPTH | cv::IMREAD_GRAYSCALE | cv::IMREAD_IGNORE_ORIENTATION);
    if (gray.empty() || gray.type() != CV_16UC1)
      return Status::corruption(what + ": cannot decode (damaged data)");
    grayClampedToRgb(gray, out);
    return Status::ok();
  }
  if (h.format == ImageFormat::kJpeg && (h.channels == 1 || h.channels == 3)) {
    return decodeJpegRgb(bytes, out, options.maxPixels);
  }
  // Not decoded in place through imdecode's `dst` argument: OpenCV 4.6
  // returns that Mat unchanged, not empty, when the header cannot be read.
  const cv::Mat bgr = cv::imdecode(buf, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  if (bgr.empty() || bgr.type() != CV_8UC3)
    return Status::corruption(what + ": cannot decode (damaged data)");
  if (static_cast<std::int64_t>(bgr.cols) * bgr.rows > options.maxPixels) {  // decoder and header disagree
    return Status::invalidArgument(what + ": decoded size over the pixel limit");
  }
  resizeImage(out, bgr.cols, bgr.rows);
  for (int y = 0; y < out.height; ++y) {
    const std::uint8_t* src = bgr.ptr<std::uint8_t>(y);
    std::uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width * 3; x += 3) {
      dst[x] = src[x + 2];
      dst[x + 1] = src[x + 1];
      dst[x + 2] = src[x];
    }
  }
  return Status::ok();
}

cv::Mat toBgr(const RgbImage& image) {
  cv::Mat bgr(image.height, image.width, CV_8UC3);
  std::copy(image.pixels.begin(), image.pixels.end(), bgr.data);
  swapRedBlue(bgr.data, static_cast<std::size_t>(image.width) * image.height);
  return bgr;
}

protocol::StatusOr<std::vector<std::uint8_t>> encode(const RgbImage& image, const char* ext,
                                                     const std::vector<int>& params) {
  if (image.empty() || image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3) {
    return Status::invalidArgument(std::string("encode ") + ext + ": empty image or wrong pixel count");
  }
  try {
    std::vector<std::uint8_t> out;
    if (!cv::imencode(ext, toBgr(image), out, params)) {
      return Status::ioError(std::string("encode ") + ext + ": OpenCV refused the image");
    }
    return out;
  } catch (const std::exception& e) {
    return Status::ioError(std::string("encode ") + ext + ": " + e.what());
  }
}

}  // namespace

Status decodeImageInto(std::span<const std::uint8_t> bytes, RgbImage& out, const DecodeOptions& options) {
  out.width = out.height = 0;
  auto header = decodeImageHeader(bytes);
  if (!header.isOk()) return header.status();
  const ImageHeader& h = header.value();
  const std::string what = formatName(h.format);
  const std::int64_t pixels = static_cast<std::int64_t>(h.width) * h.height;
  if (pixels > options.maxPixels) {
    return Status::invalidArgument(what + ": " + std::to_string(h.width) + "x" + std::to_string(h.height) +
                                   " is over the limit of " + std::to_string(options.maxPixels) +
                                   " pixels (decompression bomb?)");
  }
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) return Status::unsupported(what + ": over 2 GiB");
  if (h.format == ImageFormat::kJpeg && !jpegHasEndMarker(bytes, h.jpegScanOffset)) {
    return Status::corruption("JPEG: truncated (no end-of-image marker after the scan data)");
  }
  Status s;
  try {
    s = decodeChecked(bytes, h, options, out);
  } catch (const std::exception& e) {  // cv::Exception, std::bad_alloc
    s = Status::corruption(what + ": decoder error: " + e.what());
  }
  if (!s.isOk()) out.width = out.height = 0;
  return s;
}

protocol::StatusOr<RgbImage> decodeImage(std::span<const std::uint8_t> bytes, const DecodeOptions& options) {
  RgbImage out;
  Status s = decodeImageInto(bytes, out, options);
  if (!s.isOk()) return s;
  return out;
}

protocol::StatusOr<std::vector<std::uint8_t>> encodeJpeg(const RgbImage& image, int quality) {
  if (quality < 1 || quality > 100) return Status::invalidArgument("encodeJpeg: quality must be in 1..100");
  return encode(image, ".jpg", {cv::IMWRITE_JPEG_QUALITY, quality});
}

protocol::StatusOr<std::vector<std::uint8_t>> encodePng(const RgbImage& image) {
  return encode(image, ".png", {cv::IMWRITE_PNG_COMPRESSION, 3});
}

}  // namespace fs::data

#include "backend/data/image/image_header.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace fs::data {
namespace {

using protocol::Status;
using Bytes = std::span<const std::uint8_t>;

std::uint32_t be16(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 8) | p[1];
}
std::uint32_t be32(const std::uint8_t* p) {
  return (be16(p) << 16) | be16(p + 2);
}
std::uint32_t le16(const std::uint8_t* p) {
  return (std::uint32_t{p[1]} << 8) | p[0];
}
std::uint32_t le24(const std::uint8_t* p) {
  return (std::uint32_t{p[2]} << 16) | le16(p);
}
std::uint32_t le32(const std::uint8_t* p) {
  return (std::uint32_t{p[3]} << 24) | le24(p);
}

bool startsWith(Bytes b, const char* magic, std::size_t n, std::size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

Status cut(const char* format) {
  return Status::corruption(std::string(format) + " header cut short");
}

bool isSof(std::uint8_t m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

// Walks the marker segments up to the first SOS: the frame header (SOF)
// must come before it, and its end is where entropy-coded data begins.
protocol::StatusOr<ImageHeader> parseJpeg(Bytes b) {
  ImageHeader h;
  h.format = ImageFormat::kJpeg;
  bool haveFrame = false;
  std::size_t pos = 2;
  while (true) {
    if (pos >= b.size()) return cut("JPEG");
    if (b[pos] != 0xFF) return Status::corruption("JPEG: bad marker before the first scan");
    while (pos < b.size() && b[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= b.size()) return cut("JPEG");
    const std::uint8_t marker = b[pos++];
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    if (marker == 0xD9) return Status::corruption("JPEG: end of image before any scan");
    if (pos + 2 > b.size()) return cut("JPEG");
    const std::size_t len = be16(&b[pos]);
    if (len < 2) return Status::corruption("JPEG: bad segment length");
    if (pos + len > b.size()) return cut("JPEG");
    if (isSof(marker)) {
      if (len < 8) return Status::corruption("JPEG: frame header too short");
      h.bitDepth = b[pos + 2];
      h.height = static_cast<int>(be16(&b[pos + 3]));
      h.width = static_cast<int>(be16(&b[pos + 5]));
      h.channels = b[pos + 7];
      haveFrame = true;
    } else if (marker == 0xDA) {
      if (!haveFrame) return Status::corruption("JPEG: scan before frame header");
      h.jpegScanOffset = pos + len;
      return h;
    }
    pos += len;
  }
}

protocol::StatusOr<ImageHeader> parsePng(Bytes b) {
  // signature(8) + length(4) + "IHDR"(4) + 13 data bytes
  if (b.size() < 29) return cut("PNG");
  if (!startsWith(b, "IHDR", 4, 12)) return Status::corruption("PNG: first chunk is not IHDR");
  ImageHeader h;
  h.format = ImageFormat::kPng;
  const std::uint32_t w = be32(&b[16]), hgt = be32(&b[20]);
  if (w > 0x7FFFFFFFu || hgt > 0x7FFFFFFFu) return Status::corruption("PNG: size out of range");
  h.width = static_cast<int>(w);
  h.height = static_cast<int>(hgt);
  h.bitDepth = b[24];
  h.pngColorType = b[25];
  switch (h.pngColorType) {
    case 0:
      h.channels = 1;
      break;
    case 2:
      h.channels = 3;
      break;
    case 3:
      h.channels = 1;
      break;
    case 4:
      h.channels = 2;
      break;
    case 6:
      h.channels = 4;
      break;
    default:
      return Status::corruption("PNG: unknown colour type " + std::to_string(h.pngColorType));
  }
  return h;
}

protocol::StatusOr<ImageHeader> parseWebp(Bytes b) {
  if (b.size() < 30) return cut("WebP");
  ImageHeader h;
  h.format = ImageFormat::kWebp;
  h.channels = 3;
  if (startsWith(b, "VP8 ", 4, 12)) {
    if (b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A)
      return Status::corruption("WebP: bad VP8 start code");
    h.width = static_cast<int>(le16(&b[26]) & 0x3FFF);
    h.height = static_cast<int>(le16(&b[28]) & 0x3FFF);
  } else if (startsWith(b, "VP8L", 4, 12)) {
    if (b[20] != 0x2F) return Status::corruption("WebP: bad VP8L signature");
    const std::uint32_t bits = le32(&b[21]);
    h.width = static_cast<int>(bits & 0x3FFF) + 1;
    h.height = static_cast<int>((bits >> 14) & 0x3FFF) + 1;
  } else if (startsWith(b, "VP8X", 4, 12)) {
    h.width = static_cast<int>(le24(&b[24])) + 1;
    h.height = static_cast<int>(le24(&b[27])) + 1;
  } else {
    return Status::unsupported("WebP: unknown first chunk");
  }
  return h;
}

protocol::StatusOr<ImageHeader> parseBmp(Bytes b) {
  if (b.size() < 26) return cut("BMP");
  ImageHeader h;
  h.format = ImageFormat::kBmp;
  h.channels = 3;
  if (le32(&b[14]) == 12) {  // OS/2 BITMAPCOREHEADER: 16-bit sizes
    h.width = static_cast<int>(le16(&b[18]));
    h.height = static_cast<int>(le16(&b[20]));
  } else {
    const auto w = static_cast<std::int32_t>(le32(&b[18]));
    const auto hgt = static_cast<std::int32_t>(le32(&b[22]));
    if (w <= 0 || hgt == INT32_MIN) return Status::corruption("BMP: bad size");
    h.width = w;
    h.height = std::abs(hgt);  // negative height = top-down rows
  }
  return h;
}

}  // namespace

const char* formatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kBmp:
      return "BMP";
  }
  return "?";
}

protocol::StatusOr<ImageHeader> decodeImageHeader(Bytes bytes) {
  if (bytes.empty()) return Status::corruption("empty image bytes");
  protocol::StatusOr<ImageHeader> h = Status::unsupported("not a JPEG, PNG, WebP or BMP image");
  if (startsWith(bytes, "\xFF\xD8\xFF", 3)) {
    h = parseJpeg(bytes);
  } else if (startsWith(bytes, "\x89PNG\r\n\x1A\n", 8)) {
    h = parsePng(bytes);
  } else if (startsWith(bytes, "RIFF", 4) && startsWith(bytes, "WEBP", 4, 8)) {
    h = parseWebp(bytes);
  } else if (startsWith(bytes, "BM", 2)) {
    h = parseBmp(bytes);
  }
  if (h.isOk() && (h->width <= 0 || h->height <= 0)) {
    return Status::corruption(std::string(formatName(h->format)) + ": zero image size");
  }
  return h;
}

protocol::StatusOr<ImageSize> decodeImageSize(Bytes bytes) {
  auto h = decodeImageHeader(bytes);
  if (!h.isOk()) return h.status();
  return ImageSize{h->width, h->height};
}

}  // namespace fs::data

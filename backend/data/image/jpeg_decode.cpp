#include "backend/data/image/jpeg_decode.h"

#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <new>
#include <string>

namespace fs::data {
namespace {

using protocol::Status;

// libjpeg's default error_exit calls exit(); ours jumps back to decode().
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jumpOnError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void ignoreMessage(j_common_ptr, int) {}

enum class Outcome { kOk, kLibjpegError, kComponents, kTooLarge, kNoMemory };

// Only trivially destructible locals live here: a longjmp out of libjpeg
// lands in this frame and must not skip a destructor.
Outcome decode(std::span<const std::uint8_t> bytes, RgbImage& out, std::int64_t maxPixels,
               ErrorManager& err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jumpOnError;
  err.pub.emit_message = ignoreMessage;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Outcome::kLibjpegError;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return Outcome::kComponents;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const std::int64_t pixels = static_cast<std::int64_t>(cinfo.output_width) * cinfo.output_height;
  if (cinfo.output_components != 3 || pixels <= 0 || pixels > maxPixels) {
    const Outcome refused = cinfo.output_components != 3 ? Outcome::kComponents : Outcome::kTooLarge;
    jpeg_destroy_decompress(&cinfo);
    return refused;
  }
  try {
    out.pixels.resize(static_cast<std::size_t>(pixels) * 3);
  } catch (const std::bad_alloc&) {
    jpeg_destroy_decompress(&cinfo);
    return Outcome::kNoMemory;
  }
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  constexpr int kRowsPerCall = 16;  // libjpeg hands out up to max_v_samp_factor * DCT size rows at once
  JSAMPROW rows[kRowsPerCall];
  while (cinfo.output_scanline < cinfo.output_height) {
    const int first = static_cast<int>(cinfo.output_scanline);
    const int n = std::min<int>(kRowsPerCall, out.height - first);
    for (int r = 0; r < n; ++r) rows[r] = out.row(first + r);
    jpeg_read_scanlines(&cinfo, rows, static_cast<JDIMENSION>(n));
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return Outcome::kOk;
}

}  // namespace

Status decodeJpegRgb(std::span<const std::uint8_t> bytes, RgbImage& out, std::int64_t maxPixels) {
  ErrorManager err{};
  const Outcome outcome = decode(bytes, out, maxPixels, err);
  if (outcome != Outcome::kOk) out.width = out.height = 0;
  switch (outcome) {
    case Outcome::kOk:
      return Status::ok();
    case Outcome::kLibjpegError:
      return Status::corruption(std::string("JPEG: cannot decode: ") + err.message);
    case Outcome::kComponents:
      return Status::unsupported("JPEG: only gray and 3-component images decode here");
    case Outcome::kTooLarge:
      return Status::invalidArgument("JPEG: decoded size over the pixel limit");
    case Outcome::kNoMemory:
      return Status::invalidArgument("JPEG: not enough memory for the decoded image");
  }
  return Status::corruption("JPEG: cannot decode");
}

}  // namespace fs::data

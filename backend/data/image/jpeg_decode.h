// JPEG decode straight into RGB through libjpeg-turbo's own API.
//
// Why not OpenCV here: Debian's OpenCV 4.6 asks libjpeg for RGB, then swaps
// every pixel to BGR with a byte loop (on Zen 4 that loop took longer than
// the decode itself), and we swapped it back. Decoding to JCS_RGB ourselves
// gives the same bytes as that round trip (same library, same default
// options: islow DCT, fancy upsampling) in a third of the time.
//
// Thread-safety: pure function; libjpeg state is per call.
#pragma once

#include <cstdint>
#include <span>

#include "backend/data/image/image_codec.h"
#include "backend/protocol/status.h"

namespace fs::data {

// Decodes a gray (1 component) or YCbCr / RGB (3 components) JPEG into `out`
// as RGB; gray is replicated into R, G and B as PIL's convert("RGB") does.
// libjpeg warnings (corrupt but decodable data) are ignored, as PIL ignores
// them. Errors: Corruption (libjpeg's message; `out` left empty),
// Unsupported (other component counts: the caller decodes CMYK / YCCK with
// OpenCV), InvalidArgument (decoded size over `maxPixels`, or no memory
// for it).
protocol::Status decodeJpegRgb(std::span<const std::uint8_t> bytes, RgbImage& out, std::int64_t maxPixels);

}  // namespace fs::data

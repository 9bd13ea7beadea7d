// Fuzz target: a shard's image bytes as the shard pipeline sees them
// (backend/data/image): decodeImageHeader and decodeImageSize (the
// decompression-bomb check and the shard inspector), then decodeImageInto
// (the decode of shard_check, laion_preparer, mmc4_preparer) with a small pixel
// limit so one input cannot allocate much. Checked: the size agrees with the
// header; a decoded image has the header's size, its pixel buffer holds
// width * height * 3 bytes, and a second decode into the same RgbImage (reused
// storage) gives the same pixels.
#include "backend/data/image/image_codec.h"
#include "backend/data/image/image_header.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  const std::span<const std::uint8_t> bytes(data, size);
  auto header = decodeImageHeader(bytes);
  auto sized = decodeImageSize(bytes);
  fs::fuzz::check(header.isOk() == sized.isOk(), "decodeImageHeader and decodeImageSize disagree on success");
  if (header.isOk()) {
    fs::fuzz::check(header->width > 0 && header->height > 0, "a header with a zero or negative size decoded");
    fs::fuzz::check(sized->width == header->width && sized->height == header->height,
                    "decodeImageSize disagrees with decodeImageHeader");
  }

  DecodeOptions options;
  options.maxPixels = 1 << 20;  // 1 Mpixel: 3 MB of RGB at most
  static RgbImage image;        // reused across inputs, as a shard worker reuses its own
  const auto status = decodeImageInto(bytes, image, options);
  if (!status.isOk()) {
    fs::fuzz::check(!status.message().empty(), "a decode error without a message");
    fs::fuzz::check(image.empty(), "a failed decode left pixels behind");
    return 0;
  }
  fs::fuzz::check(header.isOk(), "an image decoded whose header does not: " + header.status().message());
  fs::fuzz::check(image.width == header->width && image.height == header->height,
                  "the decoded size " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                      " is not the header's " + std::to_string(header->width) + "x" +
                      std::to_string(header->height));
  fs::fuzz::check(image.pixels.size() == static_cast<std::size_t>(image.width) * image.height * 3,
                  "the pixel buffer is not width * height * 3 bytes");
  auto again = decodeImage(bytes, options);
  fs::fuzz::check(again.isOk() && again->pixels == image.pixels, "a second decode gave other pixels");
  return 0;
}

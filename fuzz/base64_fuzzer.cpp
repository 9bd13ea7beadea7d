// Fuzz target: the Python-lenient base64 decoder MMC4 images go through
// (data::decodeBase64Lenient) on any text; and the round trip: the input's bytes,
// encoded as standard base64, must decode to the same bytes.
#include <span>

#include "backend/data/documents/base64.h"
#include "backend/data/shardgen/base64_encode.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::data;
  auto lenient = decodeBase64Lenient(fs::fuzz::text(data, size));
  if (lenient.isOk())
    fs::fuzz::check(lenient.value().size() <= size * 3 / 4 + 3, "decoded more bytes than fit");
  const std::string encoded = encodeBase64(std::span<const std::uint8_t>(data, size));
  auto decoded = decodeBase64Lenient(encoded);
  fs::fuzz::check(decoded.isOk(), "standard base64 was rejected: " + encoded);
  fs::fuzz::check(decoded.value() == fs::fuzz::text(data, size), "decode(encode(b)) != b for " + encoded);
  return 0;
}

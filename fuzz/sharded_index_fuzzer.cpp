// Fuzz target: a sharded checkpoint's index.json (protocol::decodeShardedIndex).
// An index that decodes is encoded again and must decode to the same index.
#include "backend/protocol/wire/sharded_index.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  auto decoded = decodeShardedIndex(fs::fuzz::text(data, size));
  if (!decoded) return 0;
  const std::string encoded = encodeShardedIndex(decoded.value());
  auto again = decodeShardedIndex(encoded);
  fs::fuzz::check(again.isOk(), "the encoded index does not decode: " + encoded);
  fs::fuzz::check(again.value() == decoded.value(), "decode(encode(i)) != i for " + encoded);
  return 0;
}

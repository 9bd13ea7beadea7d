// Fuzz target: a control file (protocol::decodeControl) and a control file's
// name (parseControlFileName). A command that decodes is encoded again and must
// decode to the same command.
#include "backend/protocol/wire/control_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  const std::string_view input = fs::fuzz::text(data, size);
  (void)parseControlFileName(input.substr(0, 256));
  auto decoded = decodeControl(input, "fuzz.json");
  if (!decoded) return 0;
  const std::string encoded = encodeControl(decoded.value());
  auto again = decodeControl(encoded, "encoded.json");
  fs::fuzz::check(again.isOk(), "the encoded control file does not decode: " + encoded);
  fs::fuzz::check(again.value() == decoded.value(), "decode(encode(c)) != c for " + encoded);
  return 0;
}

// Fuzz target: the plan JSON `flamingo-train plan --json` writes and the GUI
// reads (protocol::decodePlanJson). A plan that decodes is encoded again and
// must decode.
#include "backend/protocol/wire/plan_record.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  auto decoded = decodePlanJson(fs::fuzz::text(data, size));
  if (!decoded) return 0;
  const std::string encoded = encodePlanJson(decoded.value());
  auto again = decodePlanJson(encoded);
  fs::fuzz::check(again.isOk(), "the encoded plan does not decode: " + encoded);
  return 0;
}

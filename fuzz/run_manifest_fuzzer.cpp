// Fuzz target: run.json, the run manifest (protocol::decodeManifest). A manifest
// that decodes is encoded again and must decode to the same manifest.
#include "backend/protocol/wire/run_manifest.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::protocol;
  auto decoded = decodeManifest(fs::fuzz::text(data, size), "run.json");
  if (!decoded) return 0;
  const std::string encoded = encodeManifest(decoded.value());
  auto again = decodeManifest(encoded, "encoded.json");
  fs::fuzz::check(again.isOk(), "the encoded manifest does not decode: " + encoded);
  // The writer stamps its own schema version: a newer minor's version (and its fields, which this
  // reader ignores) is not kept.
  RunManifest expected = decoded.value();
  expected.schema_version = std::string(kManifestSchemaVersion);
  fs::fuzz::check(again.value() == expected, "decode(encode(m)) != m for " + encoded);
  return 0;
}

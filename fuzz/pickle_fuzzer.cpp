// Fuzz target: the safe unpickler (tensorfile::unpickle) on a bare pickle, as
// data.pkl in a torch.save file; every storage key resolves to a small fake
// record so torch's tensor reconstructors run and check extents. The tree that
// comes out is walked the way the inspector walks it.
#include <span>

#include "backend/tensorfile/pickle_reader.h"
#include "backend/tensorfile/state_dict.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::tensorfile;
  PickleOptions options;
  options.sourceName = "fuzz.pkl";
  options.resolveStorage = [](const std::string& key) -> StatusOr<StorageRecord> {
    if (key == "missing") return Status::notFound("no storage 'missing'");
    return StorageRecord{"archive/data/" + key, 0, 64, true};
  };
  auto root = unpickle(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), options);
  if (!root) {
    fs::fuzz::check(!root.status().message().empty(), "an error without a message");
    return 0;
  }
  (void)toDebugString(*root.value(), 6, 16);
  (void)checkpointSections(*root.value());
  (void)flattenTensors(*root.value(), {.maxVisits = 100'000});
  return 0;
}

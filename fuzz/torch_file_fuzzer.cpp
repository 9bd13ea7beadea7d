// Fuzz target: a whole torch.save file (tensorfile::TorchFile: zip, data.pkl,
// storages), then everything a reader of the tree touches: sections, the
// flattened tensors and each tensor's bytes (strided views included).
#include <vector>

#include "backend/tensorfile/state_dict.h"
#include "backend/tensorfile/torch_file.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::tensorfile;
  if (size == 0) return 0;
  const bool verifyCrc = data[0] & 1;  // with the CRC checked, most mutations stop at the zip
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data) + 1,
                               reinterpret_cast<const std::byte*>(data) + size);
  auto file = TorchFile::fromMapped(MappedFile::fromBytes("fuzz.pt", std::move(bytes)),
                                    {.verifyPickleCrc = verifyCrc});
  if (!file) {
    fs::fuzz::check(file.status().message().rfind("fuzz.pt", 0) == 0,
                    "an error that does not name the file: " + file.status().message());
    return 0;
  }
  (void)toDebugString(file->root(), 6, 16);
  (void)checkpointSections(file->root());
  auto flat = flattenTensors(file->root(), {.maxVisits = 100'000});
  if (!flat) return 0;
  for (const auto& t : flat.value()) {
    auto contiguous = file->contiguousBytes(*t.tensor);
    if (contiguous) fs::fuzz::check(contiguous->size() == t.tensor->byteSize(), "contiguousBytes size");
  }
  return 0;
}

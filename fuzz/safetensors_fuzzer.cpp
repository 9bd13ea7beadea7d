// Fuzz target: a .safetensors file (tensorfile::SafetensorsFile: the 8-byte
// header length, the JSON header, dtypes, shapes and data offsets), then every
// tensor's bytes and strided view.
#include <vector>

#include "backend/tensorfile/safetensors.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::tensorfile;
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                               reinterpret_cast<const std::byte*>(data) + size);
  auto file = SafetensorsFile::fromMapped(MappedFile::fromBytes("fuzz.safetensors", std::move(bytes)));
  if (!file) return 0;
  for (const SafetensorsEntry& entry : file->tensors()) {
    const auto span = file->bytes(entry);
    const auto whole = file->fileBytes();
    fs::fuzz::check(span.data() >= whole.data() && span.data() + span.size() <= whole.data() + whole.size(),
                    "a tensor's bytes lie outside the file: " + entry.name);
    (void)file->view(entry);
  }
  return 0;
}

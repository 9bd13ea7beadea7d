// Fuzz target: the zip container of torch.save files (tensorfile::ZipReader):
// the end-of-central-directory records (zip64 too), the central directory,
// local headers, entry data ranges and CRC-32 checks.
#include <span>

#include "backend/tensorfile/zip_reader.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fs::tensorfile;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto zip = ZipReader::open(bytes, "fuzz.zip");
  if (!zip) return 0;
  for (const ZipEntry& entry : zip->entries()) {
    auto range = zip->data(entry);
    if (range) {
      fs::fuzz::check(range->data() >= bytes.data() && range->data() + range->size() <= bytes.data() + size,
                      "an entry's data lies outside the file: " + entry.name);
      (void)zip->verifyCrc(entry);
    }
    fs::fuzz::check(zip->find(entry.name) != nullptr, "find() misses a listed entry: " + entry.name);
  }
  (void)torchArchiveFolder(zip.value());
  return 0;
}

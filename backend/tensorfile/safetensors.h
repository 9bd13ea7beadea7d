// The safetensors format: read (zero-copy over a mapping) and write.
//
//   [u64 little-endian N][N bytes of JSON header][data]
//   header: {"__metadata__": {str: str}?, "<name>": {"dtype": "F32",
//            "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//
// Offsets are relative to the data section. The reader checks what the
// reference implementation checks: header length within the file, valid JSON
// object, known dtype, non-negative shape, end - begin == numel * itemsize,
// tensors neither overlapping nor leaving holes, data section fully covered.
// Every failure is a Corruption status naming the file and the tensor.
//
// Thread-safety: SafetensorsFile's const methods may be called concurrently.
// Ownership: SafetensorsFile owns its mapping; spans are valid while it lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/protocol/io/write_env.h"
#include "backend/tensorfile/mapped_file.h"
#include "backend/tensorfile/tensor_view.h"

namespace fs::tensorfile {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the data section
  std::uint64_t end = 0;
};

class SafetensorsFile {
 public:
  static StatusOr<SafetensorsFile> open(const std::string& path);
  static StatusOr<SafetensorsFile> fromMapped(MappedFile file);

  // In header order.
  const std::vector<SafetensorsEntry>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry* find(const std::string& name) const;
  // REQUIRES: entry is one of tensors().
  std::span<const std::byte> bytes(const SafetensorsEntry& entry) const;
  TensorView view(const SafetensorsEntry& entry) const;
  const std::string& path() const { return file_.path(); }
  std::span<const std::byte> fileBytes() const { return file_.bytes(); }

 private:
  Status parse();

  MappedFile file_;
  std::uint64_t dataStart_ = 0;
  std::vector<SafetensorsEntry> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> data;  // numel * itemSize(dtype) bytes, row-major
};

// Writes `tensors` (in the given order) to `path` through a temporary file in
// the same directory, fsync, rename and directory sync, every step through `env`
// (null: the real file system; protocol/io/write_env.h). The header is padded with
// spaces to a multiple of 8 bytes, as the reference writer does. InvalidArgument for
// duplicate or empty names, a name "__metadata__", or data of the wrong size.
Status writeSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                        const std::map<std::string, std::string>& metadata = {},
                        protocol::WriteEnv* env = nullptr);

}  // namespace fs::tensorfile

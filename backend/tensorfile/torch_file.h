// A torch.save file (PyTorch >= 1.6 zip format): its unpickled value tree and
// zero-copy access to the bytes of every tensor in it.
//
//   auto file = openTorchFile("checkpoint_3.pt");
//   if (!file) return file.status();            // message names the file and what is wrong
//   auto sections = checkpointSections(file->root());      // state_dict.h
//   auto tensors = flattenTensors(*sections.model);         // "a.b.weight" -> TensorRef
//   auto bytes = file->tensorBytes(*tensors->front().tensor);  // span into the mapping
//
// Opening maps the file, reads the zip directory, checks data.pkl's CRC and
// unpickles it (pickle_reader.h: nothing is executed). Storages are not read
// until asked for. Legacy files (PyTorch < 1.6, _use_new_zipfile_serialization
// =False) are recognised and reported as unsupported.
//
// Ownership: TorchFile owns the mapping; spans it returns are valid while it
// lives (moving it keeps them valid). Move-only. Thread-safety: const methods
// may be called concurrently.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "backend/tensorfile/mapped_file.h"
#include "backend/tensorfile/pickle_reader.h"
#include "backend/tensorfile/zip_reader.h"

namespace fs::tensorfile {

struct TorchFileOptions {
  bool verifyPickleCrc = true;  // check data.pkl against its zip CRC-32 before unpickling
};

class TorchFile {
 public:
  static StatusOr<TorchFile> open(const std::string& path, const TorchFileOptions& options = {});
  // From bytes already in memory or mapped (e.g. fetched over SFTP).
  static StatusOr<TorchFile> fromMapped(MappedFile file, const TorchFileOptions& options = {});

  const PyValue& root() const { return *root_; }
  const PyValuePtr& rootPtr() const { return root_; }
  const std::string& path() const { return file_.path(); }
  // "archive" for records named "archive/data.pkl", "archive/data/0", ...
  const std::string& archiveFolder() const { return folder_; }
  // The "<folder>/version" record (serialization format version), 0 if absent.
  int formatVersion() const { return formatVersion_; }
  const ZipReader& zip() const { return zip_; }
  std::span<const std::byte> fileBytes() const { return file_.bytes(); }

  // The bytes `tensor` spans: from its first element to one past its last one
  // reachable through its strides, inside its storage record. Checks that the
  // storage is one of this file's stored records and that offset, strides and
  // dtype stay inside it. Empty for tensors without elements.
  StatusOr<std::span<const std::byte>> tensorBytes(const TensorRef& tensor) const;
  StatusOr<TensorView> view(const TensorRef& tensor) const;
  // The elements in row-major order, packed (a copy; handles non-contiguous views).
  StatusOr<std::vector<std::byte>> contiguousBytes(const TensorRef& tensor) const;

 private:
  TorchFile() = default;
  Status load(const TorchFileOptions& options);

  MappedFile file_;
  ZipReader zip_;
  std::string folder_;
  int formatVersion_ = 0;
  PyValuePtr root_;
};

inline StatusOr<TorchFile> openTorchFile(const std::string& path, const TorchFileOptions& options = {}) {
  return TorchFile::open(path, options);
}

// True when `bytes` start like a legacy (non-zip) torch.save file: a pickled
// magic number 0x1950a86a20f9469cfc6c.
bool isLegacyTorchSave(std::span<const std::byte> bytes);

}  // namespace fs::tensorfile

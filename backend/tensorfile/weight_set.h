// One lookup over the tensors of a checkpoint that may span several files:
// a single .safetensors or torch.save file, a sharded checkpoint described by
// an index (model.safetensors.index.json, pytorch_model.bin.index.json:
// {"metadata": {...}, "weight_map": {tensor name: shard file}}), or a Hugging
// Face model directory (picks the index, else the single file).
//
// torch.save files contribute their flattened state dict (state_dict.h), so a
// bare state dict's names are the module's parameter names.
//
// Ownership: a WeightSet owns its files (mapped); views are valid while it
// lives. Move-only. Thread-safety: const methods may be called concurrently.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/tensorfile/safetensors.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::tensorfile {

class WeightSet {
 public:
  // A .safetensors file (by content: a torch.save file starts with "PK").
  static StatusOr<WeightSet> openFile(const std::string& path);
  // A sharded checkpoint index. Shard names must be plain relative paths
  // inside the index's folder. Every name in weight_map must be in its shard
  // (NotFound naming both otherwise); tensors of a shard that the map does not
  // list are ignored.
  static StatusOr<WeightSet> openIndex(const std::string& indexPath);
  // A directory: model.safetensors.index.json, model.safetensors,
  // pytorch_model.bin.index.json, pytorch_model.bin, in that order of preference.
  static StatusOr<WeightSet> openDirectory(const std::string& dir);

  WeightSet(WeightSet&&) noexcept;
  WeightSet& operator=(WeightSet&&) noexcept;
  ~WeightSet();

  // Tensor names in file order (index order for sharded sets: sorted by name).
  const std::vector<std::string>& names() const { return names_; }
  bool contains(std::string_view name) const { return where_.count(std::string(name)) != 0; }
  StatusOr<TensorView> get(std::string_view name) const;
  // The file a tensor comes from (NotFound if unknown).
  StatusOr<std::string> fileOf(std::string_view name) const;
  // The whole of the file a tensor comes from, as mapped (get()'s view lies inside it).
  StatusOr<std::span<const std::byte>> fileBytesOf(std::string_view name) const;
  // The files opened, in the order first referenced.
  std::vector<std::string> files() const;
  // The index's "metadata" object as key -> JSON text (e.g. "total_size" -> "123"); empty otherwise.
  const std::map<std::string, std::string>& indexMetadata() const { return indexMetadata_; }

 private:
  struct Source;
  struct Location {
    std::size_t source = 0;
    std::size_t slot = 0;  // index into the source's tensor list
  };
  WeightSet();
  Status addFile(const std::string& path, const std::vector<std::string>* onlyNames);

  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Location> where_;
  std::map<std::string, std::string> indexMetadata_;
};

}  // namespace fs::tensorfile

#include "backend/tensorfile/weight_set.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "backend/tensorfile/state_dict.h"

namespace fs::tensorfile {

namespace stdfs = std::filesystem;
using Json = nlohmann::ordered_json;

struct WeightSet::Source {
  std::string path;
  std::optional<SafetensorsFile> safetensors;
  std::optional<TorchFile> torch;
  std::vector<const SafetensorsEntry*> entries;  // safetensors: slot -> entry
  std::vector<NamedTensor> tensors;              // torch: slot -> tensor
};

WeightSet::WeightSet() = default;
WeightSet::WeightSet(WeightSet&&) noexcept = default;
WeightSet& WeightSet::operator=(WeightSet&&) noexcept = default;
WeightSet::~WeightSet() = default;

Status WeightSet::addFile(const std::string& path, const std::vector<std::string>* onlyNames) {
  auto src = std::make_unique<Source>();
  src->path = path;
  std::unordered_map<std::string, std::size_t> slots;
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  const auto head = mapped->bytes().first(std::min<std::size_t>(2, mapped->size()));
  const bool isZip =
      head.size() == 2 && std::to_integer<char>(head[0]) == 'P' && std::to_integer<char>(head[1]) == 'K';
  if (isZip || isLegacyTorchSave(mapped->bytes())) {
    auto tf = TorchFile::fromMapped(std::move(mapped.value()));
    if (!tf) return tf.status();
    src->torch.emplace(std::move(tf.value()));
    const auto sections = checkpointSections(src->torch->root());
    FlattenOptions options;
    options.includeSequences = false;
    auto flat = flattenTensors(sections.model ? *sections.model : src->torch->root(), options);
    if (!flat) return Status::invalidArgument(path + ": " + flat.status().message());
    src->tensors = std::move(flat.value());
    for (std::size_t i = 0; i < src->tensors.size(); ++i) slots.emplace(src->tensors[i].name, i);
  } else {
    auto sf = SafetensorsFile::fromMapped(std::move(mapped.value()));
    if (!sf) return sf.status();
    src->safetensors.emplace(std::move(sf.value()));
    for (const auto& e : src->safetensors->tensors()) {
      slots.emplace(e.name, src->entries.size());
      src->entries.push_back(&e);
    }
  }
  const std::size_t sourceIndex = sources_.size();
  auto add = [&](const std::string& name, std::size_t slot) -> Status {
    if (!where_.emplace(name, Location{sourceIndex, slot}).second) {
      return Status::invalidArgument(path + ": tensor '" + name + "' is also in another file");
    }
    names_.push_back(name);
    return Status::ok();
  };
  if (onlyNames) {
    for (const auto& name : *onlyNames) {
      auto it = slots.find(name);
      if (it == slots.end())
        return Status::notFound(path + ": has no tensor '" + name + "' (the index maps it here)");
      if (Status st = add(name, it->second); !st) return st;
    }
  } else {
    const std::size_t n = src->torch ? src->tensors.size() : src->entries.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (Status st = add(src->torch ? src->tensors[i].name : src->entries[i]->name, i); !st) return st;
    }
  }
  sources_.push_back(std::move(src));
  return Status::ok();
}

StatusOr<WeightSet> WeightSet::openFile(const std::string& path) {
  WeightSet set;
  if (Status st = set.addFile(path, nullptr); !st) return st;
  return set;
}

StatusOr<WeightSet> WeightSet::openIndex(const std::string& indexPath) {
  std::ifstream in(indexPath, std::ios::binary);
  if (!in) return Status::notFound(indexPath + ": cannot open index");
  const Json json = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Status::corruption(indexPath + ": not a JSON object");
  const auto map = json.find("weight_map");
  if (map == json.end() || !map->is_object())
    return Status::corruption(indexPath + ": no \"weight_map\" object");
  WeightSet set;
  if (const auto meta = json.find("metadata"); meta != json.end() && meta->is_object()) {
    for (const auto& [k, v] : meta->items())
      set.indexMetadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  std::vector<std::string> files;
  std::unordered_map<std::string, std::vector<std::string>> namesByFile;
  for (const auto& [name, file] : map->items()) {
    if (!file.is_string())
      return Status::corruption(indexPath + ": weight_map['" + name + "'] is not a file name");
    const std::string f = file.get<std::string>();
    const stdfs::path rel(f);
    bool safe = !f.empty() && rel.is_relative();
    for (const auto& part : rel) safe = safe && part != "..";
    if (!safe)
      return Status::invalidArgument(indexPath + ": shard '" + f +
                                     "' is not a relative path inside its folder");
    auto [it, inserted] = namesByFile.try_emplace(f);
    if (inserted) files.push_back(f);
    it->second.push_back(name);
  }
  const stdfs::path dir = stdfs::path(indexPath).parent_path();
  // NOTE [Indexes do not nest] (backend/inspect/sparse_mirror.cpp): a shard is a weight
  // file; one that is this index (by canonical path: symlinks too) or another index is
  // refused here by name, not read as a corrupt safetensors file.
  std::error_code ec;
  const stdfs::path self = stdfs::weakly_canonical(indexPath, ec);
  for (const auto& f : files) {
    const std::string entry = "weight_map['" + namesByFile[f].front() + "']";
    const stdfs::path shard = stdfs::weakly_canonical(dir / f, ec);
    if (!self.empty() && shard == self) {
      return Status::corruption(indexPath + ": " + entry + " names '" + f +
                                "', the index itself (a cycle); a shard is a weight file");
    }
    if (f.ends_with(".json")) {
      return Status::corruption(indexPath + ": " + entry + " names '" + f +
                                "', another index; indexes do not nest (the files an index names are "
                                "weight files: .safetensors, torch.save)");
    }
  }
  for (const auto& f : files) {
    if (Status st = set.addFile((dir / f).string(), &namesByFile[f]); !st) return st;
  }
  return set;
}

StatusOr<WeightSet> WeightSet::openDirectory(const std::string& dir) {
  const stdfs::path d(dir);
  for (const std::string name : {"model.safetensors.index.json", "model.safetensors",
                                 "pytorch_model.bin.index.json", "pytorch_model.bin"}) {
    std::error_code ec;
    if (!stdfs::is_regular_file(d / name, ec)) continue;
    return name.ends_with(".json") ? openIndex((d / name).string()) : openFile((d / name).string());
  }
  return Status::notFound(dir + ": no model.safetensors(.index.json) or pytorch_model.bin(.index.json)");
}

StatusOr<TensorView> WeightSet::get(std::string_view name) const {
  auto it = where_.find(std::string(name));
  if (it == where_.end()) return Status::notFound("no tensor named '" + std::string(name) + "'");
  const Source& src = *sources_[it->second.source];
  if (src.safetensors) return src.safetensors->view(*src.entries[it->second.slot]);
  return src.torch->view(*src.tensors[it->second.slot].tensor);
}

StatusOr<std::string> WeightSet::fileOf(std::string_view name) const {
  auto it = where_.find(std::string(name));
  if (it == where_.end()) return Status::notFound("no tensor named '" + std::string(name) + "'");
  return sources_[it->second.source]->path;
}

StatusOr<std::span<const std::byte>> WeightSet::fileBytesOf(std::string_view name) const {
  auto it = where_.find(std::string(name));
  if (it == where_.end()) return Status::notFound("no tensor named '" + std::string(name) + "'");
  const Source& src = *sources_[it->second.source];
  return src.safetensors ? src.safetensors->fileBytes() : src.torch->fileBytes();
}

std::vector<std::string> WeightSet::files() const {
  std::vector<std::string> out;
  for (const auto& s : sources_) out.push_back(s->path);
  return out;
}

}  // namespace fs::tensorfile

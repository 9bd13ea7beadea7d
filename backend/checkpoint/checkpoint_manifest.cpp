#include "backend/checkpoint/checkpoint_manifest.h"

#include <torch/torch.h>

#include <map>

#include "backend/runtime/runtime_info.h"
#include "backend/tensorfile/content_hash.h"

namespace fs::checkpoint {

using protocol::Status;

std::string tensorDigest(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  const auto* data = static_cast<const std::byte*>(t.data_ptr());
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  return tensorfile::contentHashText(tensorfile::xxh64({data, bytes}));
}

protocol::CheckpointManifest buildCheckpointManifest(const protocol::RunConfig& config,
                                                     const data::SpecialTokenIds& tokens,
                                                     const model::NamedTensors& parameters,
                                                     const model::NamedTensors& saved) {
  const auto& m = config.model;
  protocol::CheckpointManifest out;
  out.engineVersion = runtime::engineVersion();
  out.lm = {m.lm.family, m.lm.width, m.lm.layers, m.lm.heads, m.lm.vocab_size, m.lm.tied_head};
  out.vision = {m.vision.path, m.vision.width, m.vision.layers, m.vision.patch_size, m.vision.image_size};
  out.crossAttnEveryNLayers = m.cross_attn.every_n_layers;
  out.addedTokens = {{"<|endofchunk|>", tokens.endofchunk}, {"<image>", tokens.image}};
  for (const auto& [name, t] : parameters)
    out.parameters.push_back({name, t.sizes().vec(), t.requires_grad()});
  return withTensorRecords(std::move(out), saved);
}

protocol::CheckpointManifest withTensorRecords(protocol::CheckpointManifest manifest,
                                               const model::NamedTensors& saved) {
  std::vector<protocol::ManifestTensor> tensors;
  for (const auto& [name, t] : saved) {
    tensors.push_back({name, t.sizes().vec(), std::string(c10::toString(t.scalar_type())), tensorDigest(t)});
  }
  manifest.tensors = std::move(tensors);
  return manifest;
}

Status verifyCheckpointManifest(const protocol::CheckpointManifest& manifest,
                                const model::NamedTensors& saved, const std::filesystem::path& path) {
  const auto bad = [&](const std::string& what) { return Status::corruption(path.string() + ": " + what); };
  if (!manifest.tensors) return Status::ok();
  std::map<std::string, const protocol::ManifestTensor*> records;
  for (const auto& r : *manifest.tensors) records[r.name] = &r;
  for (const auto& [name, t] : saved) {
    auto it = records.find(name);
    if (it == records.end()) return bad("tensor '" + name + "' is not in the manifest");
    const protocol::ManifestTensor& r = *it->second;
    if (r.shape != t.sizes().vec() || r.dtype != c10::toString(t.scalar_type())) {
      return bad("tensor '" + name + "' has shape " + model::shapeString(t.sizes().vec()) + " " +
                 c10::toString(t.scalar_type()) + ", the manifest says " + model::shapeString(r.shape) + " " +
                 r.dtype);
    }
    if (tensorDigest(t) != r.hash)
      return bad("tensor '" + name + "' does not match its manifest hash (damaged file)");
    records.erase(it);
  }
  if (!records.empty())
    return bad("tensor '" + records.begin()->first + "' is in the manifest but not in the file");
  return Status::ok();
}

}  // namespace fs::checkpoint

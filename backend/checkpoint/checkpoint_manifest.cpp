#include "backend/checkpoint/checkpoint_manifest.h"

#include <torch/torch.h>

#include <map>
#include <nlohmann/json.hpp>

#include "backend/runtime/runtime_info.h"
#include "backend/tensorfile/content_hash.h"

namespace fs::engine {

using protocol::Status;

std::string tensorDigest(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  const auto* data = static_cast<const std::byte*>(t.data_ptr());
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  return tensorfile::contentHashText(tensorfile::xxh64({data, bytes}));
}

std::string buildCheckpointManifest(const protocol::RunConfig& config, const data::SpecialTokenIds& tokens,
                                    const model::NamedTensors& parameters, const model::NamedTensors& saved) {
  const auto& m = config.model;
  nlohmann::json j;
  j["engine_version"] = runtime::engineVersion();
  j["lm"] = {{"family", m.lm.family}, {"width", m.lm.width},           {"layers", m.lm.layers},
             {"heads", m.lm.heads},   {"vocab_size", m.lm.vocab_size}, {"tied_head", m.lm.tied_head}};
  j["vision"] = {{"path", m.vision.path},
                 {"width", m.vision.width},
                 {"layers", m.vision.layers},
                 {"patch_size", m.vision.patch_size},
                 {"image_size", m.vision.image_size}};
  j["cross_attn_every_n_layers"] = m.cross_attn.every_n_layers;
  j["added_tokens"] = {{"<|endofchunk|>", tokens.endofchunk}, {"<image>", tokens.image}};
  nlohmann::json params = nlohmann::json::array();
  for (const auto& [name, t] : parameters) {
    params.push_back({{"name", name}, {"shape", t.sizes().vec()}, {"trainable", t.requires_grad()}});
  }
  j["parameters"] = std::move(params);
  return withTensorRecords(j.dump(), saved);
}

std::string withTensorRecords(const std::string& manifest, const model::NamedTensors& saved) {
  nlohmann::json j = nlohmann::json::parse(manifest);
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& [name, t] : saved) {
    tensors.push_back({{"name", name},
                       {"shape", t.sizes().vec()},
                       {"dtype", std::string(c10::toString(t.scalar_type()))},
                       {"hash", tensorDigest(t)}});
  }
  j["tensors"] = std::move(tensors);
  return j.dump();
}

Status verifyCheckpointManifest(const std::string& manifest, const model::NamedTensors& saved,
                                const std::filesystem::path& path) {
  const auto bad = [&](const std::string& what) { return Status::corruption(path.string() + ": " + what); };
  const auto j = nlohmann::json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("its manifest is not valid JSON");
  if (!j.contains("tensors")) return Status::ok();
  struct Record {
    std::vector<int64_t> shape;
    std::string dtype, hash;
  };
  std::map<std::string, Record> records;
  try {
    for (const auto& r : j.at("tensors")) {
      records[r.at("name").get<std::string>()] = {r.at("shape").get<std::vector<int64_t>>(),
                                                  r.at("dtype").get<std::string>(),
                                                  r.at("hash").get<std::string>()};
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("its manifest's tensor list is malformed (") + e.what() + ")");
  }
  for (const auto& [name, t] : saved) {
    auto it = records.find(name);
    if (it == records.end()) return bad("tensor '" + name + "' is not in the manifest");
    const Record& r = it->second;
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

}  // namespace fs::engine

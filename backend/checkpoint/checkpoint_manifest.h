// The manifest every checkpoint carries (ResumeState::manifest; its record
// and field list: protocol::CheckpointManifest in
// backend/protocol/wire/checkpoint_record.h): what
// model it belongs to (LM family and dims, vision tower, cross-attention
// interval, added tokens), every parameter's name, shape and trainability,
// and a content hash of each tensor saved in model_state_dict. Resuming
// checks the hashes, so a damaged file is refused by name instead of
// training on silently corrupted weights.
//
//   auto manifest = buildCheckpointManifest(config, tokens, model->namedParameters(), saved);
//   if (Status s = verifyCheckpointManifest(manifest, saved, path); !s) ...
//
// Thread-safety: free functions; the tensors must not change while hashing.
#pragma once

#include <filesystem>
#include <string>

#include "backend/data/special_tokens.h"
#include "backend/model/state_dict.h"
#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"

namespace fs::checkpoint {

// A 64-bit hash of the tensor's elements in row-major order (its dtype's
// bytes), as 16 hex digits. Equal values of one dtype and shape hash equal,
// whatever the strides.
std::string tensorDigest(const torch::Tensor& tensor);

protocol::CheckpointManifest buildCheckpointManifest(const protocol::RunConfig& config,
                                                     const data::SpecialTokenIds& tokens,
                                                     const model::NamedTensors& parameters,
                                                     const model::NamedTensors& saved);

// `manifest` with its tensor records replaced by those of `saved`: a sharded
// checkpoint records none (nobody holds the whole tensors when it is
// written; its shards carry their own hashes), its reader adds them.
protocol::CheckpointManifest withTensorRecords(protocol::CheckpointManifest manifest,
                                               const model::NamedTensors& saved);

// Every tensor in `saved` against the manifest's record of it: same shape,
// dtype and hash, and every recorded tensor present. A manifest without
// tensor records (engines before 0.2) passes. Errors name `path` and the tensor.
protocol::Status verifyCheckpointManifest(const protocol::CheckpointManifest& manifest,
                                          const model::NamedTensors& saved,
                                          const std::filesystem::path& path);

}  // namespace fs::checkpoint

// Pretrained and foreign weights into the model: tensors read by
// backend/tensorfile (torch.save zip files, safetensors, Hugging Face model
// directories) become torch::Tensors and are loaded with the model's
// LoadReport-producing loaders.
//
//   auto sd = loadStateDictFile("checkpoint_3.pt");   // bare state dict or {model_state_dict: ...}
//   auto loaded = loadPretrained(model, config.model); // model.lm.path, model.vision.pretrained
//
// Flamingo Studio never downloads: model.lm.path must be a local folder (or
// file) and model.vision.pretrained a local file; a Hugging Face id or an
// OpenCLIP tag ("openai") is a clear error saying what to download.
//
// Tensors are copied out of the file mapping (row-major, any strides, shared
// storages each copied), so files are closed when these functions return.
// Thread-safety: free functions; loadPretrained mutates the model (no step may
// run concurrently).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/model/flamingo.h"
#include "backend/protocol/status.h"
#include "backend/step/optimizer.h"
#include "backend/step/schedule.h"
#include "backend/tensorfile/tensor_view.h"
#include "backend/tensorfile/torch_file.h"

namespace fs::protocol {
struct ModelConfig;
}

namespace fs::checkpoint {

using StateDict = std::map<std::string, torch::Tensor>;

// The torch dtype of a tensorfile dtype (LibTorch 2.x has every one).
protocol::StatusOr<c10::ScalarType> torchDtype(tensorfile::DType dtype);
// A packed, owning copy of `view` (its strides honoured).
protocol::StatusOr<torch::Tensor> toTorch(const tensorfile::TensorView& view);

// One tensor of an open torch.save file as an owning torch::Tensor; errors
// name the file and `name`.
protocol::StatusOr<torch::Tensor> tensorFromFile(const tensorfile::TorchFile& file,
                                                 const tensorfile::TensorRef& ref, const std::string& name);
// Every tensor under `section` of an open torch.save file, nested names joined with '.'.
protocol::StatusOr<StateDict> stateDictFromSection(const tensorfile::TorchFile& file,
                                                   const tensorfile::PyValue& section);

// A torch.save file (a bare state dict, or a checkpoint dict whose model
// section is model_state_dict / state_dict / ...) or a .safetensors file.
// A `module.` prefix carried by every key is stripped.
protocol::StatusOr<StateDict> loadStateDictFile(const std::string& path);

// Every tensor of a Hugging Face model directory (index json + shards,
// model.safetensors, pytorch_model.bin) or of a single weight file.
protocol::StatusOr<StateDict> loadWeightSet(const std::string& path);

// An OpenFlamingo training checkpoint written by Python (torch.save of
// {epoch, model_state_dict, optimizer_state_dict, lr_scheduler_state_dict}),
// or a released bare state dict (checkpoint.pt): only `model` is then set.
struct ForeignCheckpoint {
  StateDict model;
  std::optional<int64_t> epoch;
  std::optional<step::OptimizerStateDict> optimizer;  // AdamW's state_dict(), when present and readable
  std::optional<step::LrSchedulerStateDict> scheduler;
  std::vector<std::string> notes;     // why a present section could not be read
  bool hasFlamingoStudioKey = false;  // our own checkpoint: use readCheckpoint instead
};
protocol::StatusOr<ForeignCheckpoint> readForeignCheckpoint(const std::string& path);

struct PretrainedLoad {
  std::vector<std::string> info;      // one line per part loaded
  std::vector<std::string> warnings;  // unexpected keys (not errors)
};

// Loads model.lm.path (Hugging Face LM weights) and model.vision.pretrained
// (an OpenCLIP checkpoint file) when set. Missing or mis-shaped keys are an
// error with the LoadReport summary; unexpected ones a warning. An LM
// embedding (or untied head) with fewer rows than the model's (the special
// tokens not yet added, as in any HF checkpoint) fills the first rows; the
// new rows keep their init, as resize_token_embeddings does.
protocol::StatusOr<PretrainedLoad> loadPretrained(model::FlamingoImpl& model,
                                                  const protocol::ModelConfig& config);

}  // namespace fs::checkpoint

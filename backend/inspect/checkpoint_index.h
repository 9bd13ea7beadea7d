// CheckpointIndex: what a checkpoint holds, read from its index only — the zip
// directory and pickle of a torch.save file, a safetensors header, a sharded
// index — with tensor data left mapped on disk until asked for.
//
//   auto ckpt = CheckpointIndex::open("runs/x/checkpoint_3.pt");
//   if (!ckpt) return ckpt.status();        // names the file and what is wrong
//   for (const TensorEntry& t : ckpt->tensors()) ...
//   auto data = ckpt->data(i);               // a view into the mapping (or a gathered copy)
//
// Formats (NOTE [Checkpoint formats]): our full checkpoints and sharded
// directories, OpenFlamingo's checkpoint_<epoch>.pt, any torch.save zip file
// (Hugging Face pytorch_model.bin included), single .safetensors files, and
// sharded .safetensors / .bin sets through their index (or a model directory).
//
// Ownership: owns the mapped files; views are valid while it lives. Move-only.
// Thread-safety: const methods may be called concurrently (statistics workers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/protocol/status.h"
#include "backend/protocol/wire/checkpoint_record.h"
#include "backend/tensorfile/dtype.h"
#include "backend/tensorfile/py_value.h"
#include "backend/tensorfile/tensor_view.h"

namespace fs::inspect {

using protocol::Status;
using protocol::StatusOr;

enum class CheckpointFormat {
  kFlamingoStudio,         // a torch.save file with our "flamingo_studio" key
  kFlamingoStudioSharded,  // a directory with index.json and rank-<s>.pt files
  kOpenFlamingo,           // {model_state_dict, optimizer_state_dict, lr_scheduler_state_dict, epoch}
  kTorchSave,              // any other torch.save zip file (a state dict, pytorch_model.bin)
  kSafetensors,            // one .safetensors file
  kShardedWeights,         // *.index.json with its weight_map (safetensors or .bin shards)
};
std::string_view formatName(CheckpointFormat format);

// Which part of a training checkpoint a tensor belongs to.
enum class Section { kModel, kOptimizer, kOther };
std::string_view sectionName(Section section);

struct TensorEntry {
  std::string name;  // model: the state dict key; optimizer: "state.<id>.exp_avg"; other: its path
  Section section = Section::kModel;
  tensorfile::DType dtype = tensorfile::DType::kFloat32;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes = 0;  // numel x item size: what the tensor holds, not what its storage holds
  std::size_t file = 0;     // index into files() (a sharded tensor: the file of its first element)
  // The first earlier entry that views exactly the same elements (tied weights,
  // e.g. an LM head sharing the embedding's storage): shown as one, counted once.
  std::optional<std::size_t> sameAs;
  std::optional<bool> trainable;  // from our manifest or sharded index; unknown elsewhere
  std::string manifestHash;       // "xxh64:<hex>", as our manifest records it; "" when none

  std::int64_t numel() const;
};

// A tensor's elements: a view into a mapped file, or (a sharded member spread
// over several rank files) a copy gathered into `owned`.
struct TensorData {
  tensorfile::TensorView view;
  std::vector<std::byte> owned;  // backs view.bytes when not empty
};

// Called by data() before a tensor's bytes are handed out: `length` bytes at
// `offset` of `file` (one of files()) are about to be read. A copy of a remote
// file that holds only its index (sparse_mirror.h) fetches them here. An error
// is data()'s error.
using DataGate = std::function<Status(const std::string& file, std::uint64_t offset, std::uint64_t length)>;

struct OpenOptions {
  DataGate gate;  // none: the files hold every byte
};

class CheckpointIndex {
 public:
  // A file (torch.save zip, .safetensors, *.index.json) or a directory (ours
  // sharded: index.json; else a Hugging Face model directory). Errors name the
  // path and, where one is at fault, the entry or tensor.
  static StatusOr<CheckpointIndex> open(const std::string& path, OpenOptions options = {});

  CheckpointIndex(CheckpointIndex&&) noexcept;
  CheckpointIndex& operator=(CheckpointIndex&&) noexcept;
  ~CheckpointIndex();

  const std::string& path() const;
  CheckpointFormat format() const;
  const std::vector<std::string>& files() const;
  std::uint64_t fileBytes() const;  // every file together, as stored
  const std::vector<TensorEntry>& tensors() const;
  // The entry named `name` in `section`, or nullopt.
  std::optional<std::size_t> find(std::string_view name, Section section = Section::kModel) const;

  // The elements of tensors()[i]. Reads nothing until the caller touches the bytes
  // (but the gate, when one was given, is asked for them first).
  StatusOr<TensorData> data(std::size_t i) const;

  // A torch.save file's value tree (training state lives in it); null otherwise.
  const tensorfile::PyValue* root() const;
  // Our checkpoint manifest; nullopt when the checkpoint carries none (or an unreadable one: see warnings()).
  const std::optional<protocol::CheckpointManifest>& manifest() const;
  // What was read but is not quite right (an unreadable manifest), for the user to see.
  const std::vector<std::string>& warnings() const;

 private:
  struct Impl;
  explicit CheckpointIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs::inspect

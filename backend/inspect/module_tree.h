// ModuleTree: a checkpoint's tensors arranged by module path ("lang_encoder" >
// "layers" > "3" > "mlp" > "fc1.weight"), with counts and bytes at every level.
//
// A tensor that views the same elements as an earlier one (TensorEntry::sameAs:
// tied weights) is listed where it is named but counted once, at its first
// name: bytes and parameters at every level are what the file holds.
//
// Thread-safety: a plain value, built once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/inspect/checkpoint_index.h"

namespace fs::inspect {

struct ModuleNode {
  std::string name;                   // the last path component ("fc1", "weight"); "" for the root
  std::string path;                   // the dotted path from the root ("lang_encoder.layers.3")
  std::vector<std::size_t> children;  // indices into ModuleTree::nodes, in first-seen order
  std::optional<std::size_t> tensor;  // a leaf: index into CheckpointIndex::tensors()

  // Below this node (itself included), tied tensors counted once:
  std::uint64_t tensors = 0;
  std::uint64_t tied = 0;  // tensors that are another one's elements under a second name
  std::int64_t elements = 0;
  std::uint64_t bytes = 0;
  std::uint64_t trainableBytes = 0;  // tensors known to be trainable
  std::uint64_t frozenBytes = 0;     // tensors known to be frozen (the rest is unknown)
};

struct ModuleTree {
  std::vector<ModuleNode> nodes;  // nodes[0] is the root

  const ModuleNode& root() const { return nodes.front(); }
  // The node at a dotted path ("" for the root), or nullptr.
  const ModuleNode* find(const std::string& path) const;
};

// The tree of the tensors of `section` in `index`.
ModuleTree buildModuleTree(const CheckpointIndex& index, Section section = Section::kModel);

}  // namespace fs::inspect

#include "backend/inspect/module_tree.h"

#include <map>

namespace fs::inspect {

const ModuleNode* ModuleTree::find(const std::string& path) const {
  for (const ModuleNode& n : nodes)
    if (n.path == path) return &n;
  return nullptr;
}

ModuleTree buildModuleTree(const CheckpointIndex& index, Section section) {
  ModuleTree tree;
  tree.nodes.push_back(ModuleNode{});
  std::map<std::pair<std::size_t, std::string>, std::size_t> childOf;  // (parent, name) -> node
  const auto& tensors = index.tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& t = tensors[i];
    if (t.section != section) continue;
    const bool counted = !t.sameAs.has_value();
    std::vector<std::size_t> chain{0};
    std::size_t at = 0;
    std::size_t begin = 0;
    while (true) {
      const std::size_t dot = t.name.find('.', begin);
      const std::string part =
          t.name.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      auto [it, fresh] = childOf.emplace(std::make_pair(at, part), tree.nodes.size());
      if (fresh) {
        ModuleNode n;
        n.name = part;
        n.path = t.name.substr(0, dot == std::string::npos ? t.name.size() : dot);
        tree.nodes.push_back(std::move(n));
        tree.nodes[at].children.push_back(it->second);
      }
      at = it->second;
      chain.push_back(at);
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    // Two tensors with one name cannot happen in a section (they are dict keys), but a
    // name may be both a leaf and a prefix ("a" and "a.b"): the leaf keeps its tensor.
    if (!tree.nodes[at].tensor) tree.nodes[at].tensor = i;
    for (std::size_t n : chain) {
      ModuleNode& node = tree.nodes[n];
      if (!counted) {
        ++node.tied;
        continue;
      }
      ++node.tensors;
      node.elements += t.numel();
      node.bytes += t.bytes;
      if (t.trainable == true) node.trainableBytes += t.bytes;
      if (t.trainable == false) node.frozenBytes += t.bytes;
    }
  }
  return tree;
}

}  // namespace fs::inspect

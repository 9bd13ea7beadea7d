// A model sharded unit by unit over a communicator (fully sharded: each
// unit's parameters live as shards between uses).
//
// NOTE [Unit lifecycle]: the model announces each wrapped module through
// its unit hooks (model/unit_hooks.h). In forward, before(): gather the
// unit; after(): free it again and hook the output's gradient, so the unit
// is gathered again just before its backward; a hook on the input's
// gradient frees it once its backward is done. Everything not in a unit
// (embeddings, final norm, head) forms the root unit, gathered from
// beginForward() to finishBackward(). Inside activation-checkpointed
// regions the forward runs without a graph, so the recompute during
// backward gathers the unit (before() in the backward phase only gathers);
// those units and frozen ones whose input needs no gradient are freed in
// finishBackward(), which also reduce-scatters every trainable unit's
// gradients into its shards.
//
// Every rank runs the same graph in the same order (CPU autograd runs on
// the calling thread), so the collectives issued from hooks line up.
// Units must not share parameters (tied parameters belong in one unit).
//
// Thread-safety: the rank's training thread.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/dist/communicator.h"
#include "backend/fsdp/flat_param.h"
#include "backend/model/unit_hooks.h"

namespace fs::fsdp {

struct UnitSpec {
  std::string path;                          // module path in the model, e.g. "perceiver"
  std::shared_ptr<torch::nn::Module> module;
};

class ShardedModel final : public model::UnitHooks {
 public:
  struct Unit {
    std::string path;
    torch::nn::Module* module = nullptr;  // null for the root unit
    std::vector<std::unique_ptr<FlatParameter>> flats;  // one per requires-grad setting present
  };

  // Moves every parameter of `root` into the flat parameters of its unit;
  // `units` must be disjoint modules inside `root`. Throws c10::Error naming
  // a parameter two units claim.
  ShardedModel(torch::nn::Module& root, std::vector<UnitSpec> units, std::shared_ptr<dist::Communicator> comm);

  const std::vector<Unit>& units() const { return units_; }  // the root unit last
  // The trainable shards, for the optimizer.
  std::vector<torch::Tensor> trainableShards() const;
  // Full bytes gathered now, over every unit.
  int64_t gatheredBytes() const;

  void beginForward();
  void beginBackward();
  // After backward: the gradients reduce-scattered (summed over ranks,
  // times `scale`, added to the shards' gradients); every unit freed.
  void finishBackward(double scale);

  void before(torch::nn::Module& module, const at::Tensor& input) override;
  void after(torch::nn::Module& module, const at::Tensor& output) override;

 private:
  enum class Phase { kIdle, kForward, kBackward };
  void gather(Unit& u);
  void free(Unit& u);

  std::shared_ptr<dist::Communicator> comm_;
  std::vector<Unit> units_;
  std::map<const torch::nn::Module*, size_t> unitOf_;
  Phase phase_ = Phase::kIdle;
};

}  // namespace fs::fsdp

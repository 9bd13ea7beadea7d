// AdamW with OpenFlamingo's two parameter groups, and its state in PyTorch's
// state_dict layout.
//
// NOTE [Weight-decay groups]: the released OpenFlamingo (v2 train.py) builds
// the optimizer from the parameters with requires_grad only; a parameter
// whose name contains "gated_cross_attn" goes to group 0 with weight_decay,
// every other to group 1 with 0. No exception for norms, gates or biases
// (the pre-v2 rule, "gated_cross_attn_layer" minus ff_gate / attn_gate /
// norm / bias, was dropped), and the input embedding is never decayed (its
// masked gradient relies on that). Groups keep the parameters' order.
//
// NOTE [AdamW]: the step is Python's torch.optim.AdamW single-tensor step (its
// CPU default; torch/optim/adam.py, _single_tensor_adam with decoupled weight
// decay), written out op for op: p *= 1 - lr wd; m.lerp_(g, 1 - b1);
// v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / (1 - b2^t)^0.5
// + eps). LibTorch's C++ AdamW::step updates m as b1 m + (1 - b1) g, which
// rounds differently (the first moments differed in their last bits on PyTorch
// 2.11; equal on 1.13, before Python moved
// to lerp), so it is not called; its AdamWParamState holds the state. A
// parameter without a gradient is skipped entirely (no decay, no
// moment update), which is why zeroGrad() sets gradients to none as the
// reference's zero_grad(set_to_none=True) does.
//
// NOTE [Float32 master weights]: AdamW on float16 tensors breaks: eps (1e-8)
// is 0 in float16, so a parameter whose gradient is 0 gets 0/0, and v
// underflows. For every float16 parameter GroupedAdamW keeps a float32 master
// copy that AdamW steps (its moments are float32 too); step() hands it the
// float16 gradient upcast, then writes the result back rounded to float16.
// bfloat16 has float32's range and is stepped as it is (optim.precision bf16
// means bfloat16 weights and AdamW state). Masters take the parameters' values
// at the first step() and at the first one after loadStateDict(): weights are
// loaded after the optimizer is built (resume, FSDP shards filled from the
// node's first rank), never between two steps.
//
// Thread-safety: a GroupedAdamW is used by one thread.
#pragma once

#include <torch/optim/adamw.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/protocol/config/config_types.h"
#include "backend/protocol/status.h"

namespace fs::step {

struct NamedParameter {
  std::string name;  // OpenFlamingo state-dict name
  torch::Tensor tensor;
  // Set for tensors that are not one model parameter (an FSDP shard of
  // several): whether it decays. Unset: decaysWeight(name).
  std::optional<bool> decays;
};

// True for a parameter that gets weight decay.
bool decaysWeight(const std::string& name);

struct ParamGroup {
  double weightDecay = 0;
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
};

// Always two groups: [0] decayed (weightDecay), [1] not (0). Frozen
// parameters (requires_grad false) are left out.
std::vector<ParamGroup> groupParameters(const std::vector<NamedParameter>& params, double weightDecay);

// One entry of state_dict()["state"]: {step, exp_avg, exp_avg_sq}.
struct AdamWParamStateDict {
  int64_t index = 0;   // the key: position over all groups' params, in order
  std::string name;    // ours, for messages and the manifest (not pickled)
  torch::Tensor step;  // float32 scalar, as PyTorch >= 1.12 keeps it
  torch::Tensor expAvg;
  torch::Tensor expAvgSq;
};

// One entry of state_dict()["param_groups"]. Python 1.13 pickles the keys in
// this order: weight_decay, lr, betas, eps, amsgrad, foreach (None), maximize,
// capturable, initial_lr (added by the LR scheduler), params.
struct AdamWGroupStateDict {
  double weightDecay = 0;
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool amsgrad = false;
  bool maximize = false;
  bool capturable = false;
  std::optional<double> initialLr;      // present when a scheduler is attached
  std::vector<int64_t> params;          // indices into the flat parameter list
  std::vector<std::string> paramNames;  // ours, same order (not pickled)
};

struct OptimizerStateDict {
  std::vector<AdamWParamStateDict> state;  // ascending index; only parameters stepped so far
  std::vector<AdamWGroupStateDict> paramGroups;
};

class GroupedAdamW {
 public:
  // lr, betas, eps and weight_decay from `optim`.
  GroupedAdamW(const std::vector<NamedParameter>& params, const protocol::OptimConfig& optim);

  torch::optim::AdamW& adamw() { return *adamw_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Every optimized parameter in state-dict index order.
  std::vector<torch::Tensor> parameters() const;

  void step();
  // Bytes of the moment tensors AdamW holds now (exp_avg, exp_avg_sq and,
  // with amsgrad, max_exp_avg_sq); step counters aside, as the planner counts.
  // The float32 masters of float16 parameters are not included.
  int64_t stateBytes() const;
  // The float32 copy AdamW steps for a float16 parameter; undefined for others.
  torch::Tensor master(size_t group, size_t k) const { return masters_.at(group).at(k); }
  // Sets every master to its parameter's current value now.
  void refreshMasters();
  void stepAsTorchOptim();
  // setToNone: drop the gradients (the reference); else zero them in place.
  void zeroGrad(bool setToNone = true);

  // `initialLrs`: one per group to record initial_lr (the scheduler's base
  // lrs), empty for none.
  OptimizerStateDict stateDict(const std::vector<double>& initialLrs = {}) const;
  // Checks group count, parameter counts and every tensor's shape, naming the
  // parameter; on success replaces the state and each group's hyperparameters
  // (as torch's load_state_dict does). On failure nothing changes.
  protocol::Status loadStateDict(const OptimizerStateDict& state);

 private:
  // What AdamW steps for groups_[g].params[k]: the master, or the parameter itself.
  const torch::Tensor& stepped(size_t g, size_t k) const {
    return masters_[g][k].defined() ? masters_[g][k] : groups_[g].params[k];
  }

  std::vector<ParamGroup> groups_;
  std::vector<std::vector<torch::Tensor>> masters_;  // NOTE [Float32 master weights]; per group, per param
  bool mastersFresh_ = false;                        // masters hold the parameters' values
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

}  // namespace fs::step

// Activation (gradient) checkpointing: run a block without keeping its
// activations, recompute it in backward.
//
// NOTE [Activation checkpointing]: OpenFlamingo wraps the perceiver, every
// gated cross-attention block and every decoder layer in PyTorch's
// non-reentrant checkpoint. Ours is a custom autograd function: forward runs
// the block under no-grad and saves only its inputs, the RNG state (CPU, and
// the inputs' device) and the autocast state; backward restores those,
// re-runs the block with grad enabled, differentiates the re-run with
// torch::autograd::grad and returns the gradients of the inputs *and of the
// block's trainable parameters* as this node's outputs. Parameters are
// explicit inputs of the node, so their gradients reach them through ordinary
// graph edges (AccumulateGrad, hooks) rather than by side-effect accumulation
// as in the reentrant variant; with the same RNG state, dropout masks are the
// same and gradients are identical to the un-checkpointed ones. Both runs keep
// the autocast weight-cast cache off: a cast cached under no-grad has no
// grad_fn, and a re-run that reused it would cut the weight's gradient.
//
// Thread-safety: free functions; the RNG state of the default generators is
// read and restored under their mutexes.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <vector>

namespace fs::model {

using CheckpointBody = std::function<torch::Tensor(const std::vector<torch::Tensor>& inputs)>;

// Returns body(inputs), recomputed in backward (see the NOTE). When grad mode
// is off or nothing among inputs and params requires grad, simply calls body.
// REQUIRES: body depends only on `inputs`, on `params` and on tensors it
// captures by value that need no gradient; `params` lists every tensor
// requiring grad that body reads besides `inputs` (trainableParameters()).
torch::Tensor checkpointed(const CheckpointBody& body, const std::vector<torch::Tensor>& inputs,
                           const std::vector<torch::Tensor>& params);

// The module's parameters that currently require grad (recursively).
std::vector<torch::Tensor> trainableParameters(const torch::nn::Module& module);

}  // namespace fs::model
